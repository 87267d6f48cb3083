"""A file question on the hosted page, in Debian's Chromium driven by
Playwright against a real `formsapi serve` process: a file of exactly the
question's maxSize is uploaded as it is picked, listed, submitted and comes
back byte for byte; one byte more is refused by the page before anything is
sent, and by the server when the page's check is bypassed.

Screenshots go to test-artifacts/screenshots/ beside the settings area's
(tests/e2e/test_browser.py), numbered after them, to be looked at.

Every page runs under the policy the service sends (its `connect-src 'self'`
lets the page's script send the file, and nothing else anywhere); only the
accessibility check bypasses it, to inject axe-core.
"""

import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, expect

from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, Windows

MAX_SIZE = 200_000
# A PDF of exactly the question's limit, and one a byte longer.
EXACT = b"%PDF-1.7\n" + bytes(range(256)) * ((MAX_SIZE - 9) // 256)
EXACT += b"\n" * (MAX_SIZE - len(EXACT))
OVER = EXACT + b"\n"

FORM: dict[str, Any] = {
    "title": "Send us your portfolio",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {
            "type": "file",
            "key": "portfolio",
            "title": "Portfolio",
            "description": "A PDF or an image.",
            "required": True,
            "accept": ["application/pdf", "image/*"],
            "maxSize": MAX_SIZE,
        },
    ],
    # Two languages: the page's switch is a button the current language's disabled.
    "translations": {"fr": {"title": "Envoyez-nous votre portfolio"}},
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(tmp_path_factory.mktemp("uploads"), "Portfolio review") as made:
        yield made


def _files(site: Site) -> int:
    """Rows of uploads, whatever their state: none may be left by a refusal."""
    with sqlite3.connect(site.database) as connection:
        return int(connection.execute("SELECT count(*) FROM files").fetchone()[0])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("4[6-9]-upload*.png") as launched:
        yield launched


def publish(site: Site) -> str:
    created = site.api("POST", "/v1/forms", json=FORM)
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


def _pick(page: Page, name: str, data: bytes) -> None:
    page.get_by_label("Portfolio").set_input_files(
        {"name": name, "mimeType": "application/pdf", "buffer": data}
    )


def _respond(page: Page, width: str) -> str:
    """A respondent on the page: the file one byte over refused by the page,
    the one of exactly the limit uploaded, the form sent. The file's id."""
    uploads: list[Request] = []
    page.on(
        "request",
        lambda request: uploads.append(request) if "/files?" in request.url else None,
    )
    status = page.locator(".upload-status")
    listed = page.locator("ul.files li")

    page.get_by_label("Your name").fill("Ada")
    shoot(page, f"46-upload-empty{width}")
    _pick(page, "too-big.pdf", OVER)
    expect(status).to_have_text("too-big.pdf is larger than 200.0 kB.")
    expect(status).to_have_class(re.compile(r"\berror\b"))
    expect(listed).to_have_count(0)
    shoot(page, f"47-upload-too-large{width}")
    assert uploads == []  # refused here: not a byte sent

    _pick(page, "portfolio.pdf", EXACT)
    expect(status).to_have_text("portfolio.pdf is uploaded.")
    # The buttons held while it was sent are back; the current language's stays off.
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(page.get_by_role("button", name="Français")).to_be_enabled()
    expect(page.get_by_role("button", name="English")).to_be_disabled()
    expect(status).not_to_have_class(re.compile(r"\berror\b"))
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("portfolio.pdf (200.0 kB)")  # as the server's pages say it
    expect(listed.get_by_role("button", name="Remove portfolio.pdf")).to_be_visible()
    assert len(uploads) == 1
    file_id = page.locator('input[type=hidden][name="portfolio"]').input_value()
    assert re.fullmatch(r"fil_[0-9a-z]{26}", file_id), file_id
    shoot(page, f"48-upload-listed{width}")

    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    return file_id


def test_a_file_of_exactly_the_limit_is_uploaded_and_sent_and_one_byte_more_is_not(
    windows: Windows, site: Site
) -> None:
    form_id = publish(site)
    url = f"{site.url}/f/{form_id}"

    ids = []
    for width, page in windows.at_each_width():
        page.goto(url)
        ids.append(_respond(page, width))
        page.close()  # and its listener

    listed = site.api("GET", f"/v1/forms/{form_id}/submissions").json()["data"]
    assert sorted(s["answers"]["portfolio"] for s in listed) == sorted(ids)
    assert {s["answers"]["name"] for s in listed} == {"Ada"}
    for file_id, submission in ((s["answers"]["portfolio"], s["id"]) for s in listed):
        about = site.api("GET", f"/v1/files/{file_id}").json()
        assert about["submissionId"] == submission
        assert about["name"] == "portfolio.pdf"
        assert about["size"] == MAX_SIZE
        downloaded = site.api("GET", f"/v1/files/{file_id}/content")
        assert downloaded.status_code == 200
        assert downloaded.content == EXACT
    assert _files(site) == 2


def test_the_server_refuses_a_file_over_the_limit_when_the_pages_check_is_bypassed(
    windows: Windows, site: Site
) -> None:
    form_id = publish(site)
    page = windows.open(viewport=LAPTOP)
    page.goto(f"{site.url}/f/{form_id}")
    before = _files(site)

    # What a script of the respondent's own could send, from the page itself.
    sent: list[dict[str, Any]] = page.evaluate(
        """async ([size]) => {
            const send = async (body) => {
                const answer = await fetch(
                    document.querySelector("[data-upload]").dataset.upload + "&name=big.pdf",
                    {method: "POST", body});
                return {status: answer.status, type: answer.headers.get("content-type"),
                        body: await answer.json()};
            };
            const pdf = new TextEncoder().encode("%PDF-1.7\\n");
            const over = new Uint8Array(size + 1);
            over.set(pdf);
            return [await send(over), await send(new Blob([over]))];
        }""",
        [MAX_SIZE],
    )

    windows.close(page)

    # And from outside a browser, without a length: cut where it runs over.
    def pieces() -> Iterator[bytes]:
        for start in range(0, len(OVER), 16_384):
            yield OVER[start : start + 16_384]

    streamed = httpx.post(
        f"{site.url}/f/{form_id}/files",
        params={"question": "portfolio", "name": "big.pdf"},
        content=pieces(),
        timeout=10,
    )
    assert "content-length" not in streamed.request.headers
    sent.append(
        {
            "status": streamed.status_code,
            "type": streamed.headers["content-type"],
            "body": streamed.json(),
        }
    )

    for answer in sent:
        assert answer["status"] == 413, answer
        assert answer["type"] == "application/problem+json"
        assert answer["body"]["limit"] == MAX_SIZE
    assert _files(site) == before


def test_the_page_may_send_a_picked_file_under_its_own_policy(windows: Windows, site: Site) -> None:
    form_id = publish(site)
    page = windows.open(viewport=LAPTOP)  # the policy as served
    page.goto(f"{site.url}/f/{form_id}")

    _pick(page, "portfolio.pdf", EXACT)

    expect(page.locator(".upload-status")).to_have_text("portfolio.pdf is uploaded.")


def test_the_page_with_a_file_question_passes_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    form_id = publish(site)
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    checker.goto(f"{site.url}/f/{form_id}")

    found = {"empty": axe_violations(checker)}
    _pick(checker, "portfolio.pdf", EXACT)
    expect(checker.locator(".upload-status")).to_have_text("portfolio.pdf is uploaded.")
    found["uploaded"] = axe_violations(checker)
    # Removed: out of the list and of the answer, the picker ready again.
    checker.get_by_role("button", name="Remove portfolio.pdf").click()
    expect(checker.locator("ul.files li")).to_have_count(0)
    expect(checker.locator('input[type=hidden][name="portfolio"]')).to_have_value("")
    expect(checker.get_by_label("Portfolio")).to_be_focused()
    _pick(checker, "too-big.pdf", OVER)
    expect(checker.locator(".upload-status")).to_have_text("too-big.pdf is larger than 200.0 kB.")
    found["too large"] = axe_violations(checker)
    _pick(checker, "portfolio.pdf", EXACT)
    expect(checker.locator(".upload-status")).to_have_text("portfolio.pdf is uploaded.")
    checker.get_by_role("button", name="Send").click()  # no name: the errors shown
    expect(checker.get_by_role("alert")).to_be_visible()
    found["with errors"] = axe_violations(checker)
    shoot(checker, "49-upload-error")

    assert found == {name: [] for name in found}
