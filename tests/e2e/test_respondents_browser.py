"""Respondents' data in a real browser: Debian's Chromium, driven by
Playwright against a real `formsapi serve` process. An owner sets how long a
form keeps its submissions on its Status and settings panel, then finds a
person by email on the Respondents' data page, downloads what is kept of
them, erases it after ticking the confirmation, and reads the audit entries;
the page passes axe.

Screenshots go to test-artifacts/screenshots/ (94-97), laptop and phone
widths, to be looked at.
"""

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, ON_PHONE, Windows
from tests.support.servers import PASSWORD

OWNER = "owner@example.com"
ADA = "ada@example.com"
FORM: dict[str, Any] = {
    "title": "Workshop sign-up",
    "hiddenFields": [{"key": "member_id"}],
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "email", "key": "email", "title": "Your email", "required": True},
    ],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(
        tmp_path_factory.mktemp("respondents"),
        "Workshops",
        ("forms:read", "forms:write", "submissions:read", "submissions:write"),
    ) as made:
        yield made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("9[4-7]-*.png") as launched:
        yield launched


def _publish(site: Site) -> str:
    created = site.api("POST", "/v1/forms", json=FORM)
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


def _submit(site: Site, form_id: str, answers: dict[str, str]) -> str:
    posted = site.api("POST", f"/v1/forms/{form_id}/submissions", json={"answers": answers})
    assert posted.status_code == 201, posted.text
    return str(posted.json()["id"])


def _sign_in(page: Page, site: Site, path: str) -> None:
    page.goto(f"{site.url}{path}")
    page.get_by_label("Email").fill(OWNER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}{path}")


def test_an_owner_sets_a_forms_retention(windows: Windows, site: Site) -> None:
    form_id = _publish(site)
    for width, page in windows.at_each_width():
        _sign_in(page, site, f"/forms/{form_id}")
        days = page.get_by_role("spinbutton", name=re.compile("^Days"))
        if not width:
            page.get_by_label("For a number of days").check()
            days.fill("90")
            days.locator("xpath=ancestor::form").get_by_role("button", name="Save").click()
            expect(page.get_by_text("older than 90 days are now deleted")).to_be_visible()
        expect(page.get_by_label("For a number of days")).to_be_checked()
        expect(days).to_have_value("90")
        days.scroll_into_view_if_needed()
        shoot(page, f"94-retention-settings{width}")

    assert site.api("GET", f"/v1/forms/{form_id}").json()["retentionDays"] == 90


def test_an_owner_finds_downloads_and_erases_a_respondent(windows: Windows, site: Site) -> None:
    form_id = _publish(site)
    theirs = [
        _submit(site, form_id, {"name": "Ada Lovelace", "email": ADA, "member_id": "M-1815"}),
        _submit(site, form_id, {"name": "Ada L.", "email": "ADA@example.com"}),
    ]
    kept = _submit(site, form_id, {"name": "Charles Babbage", "email": "cb@example.com"})
    downloaded: dict[str, Any] = {}
    # The phone only finds; the laptop then erases.
    for width, options in (("-phone", ON_PHONE), ("", {"viewport": LAPTOP})):
        page = windows.open(accept_downloads=True, **options)
        _sign_in(page, site, "/settings/respondents")
        expect(page.get_by_role("heading", name="Respondents' data")).to_be_visible()
        shoot(page, f"95-respondents-find{width}")
        page.get_by_label("Email address or value").fill(ADA)
        page.get_by_role("button", name="Find").click()
        found = page.get_by_role("region", name="Found")
        expect(found.get_by_text("2 submissions and 0 partial responses")).to_be_visible()
        for submission_id in theirs:
            expect(found.get_by_text(submission_id)).to_be_visible()
        expect(found.get_by_text(kept)).to_have_count(0)
        shoot(page, f"96-respondents-found{width}")
        if width:
            windows.close(page)
            continue
        with page.expect_download() as download:
            found.get_by_role("button", name="Download as JSON").click()
        path = download.value.path()
        assert download.value.suggested_filename == "respondent-data.json"
        downloaded = json.loads(path.read_text())
        found.get_by_label("I understand these answers cannot be brought back").check()
        found.get_by_role("button", name="Erase all of it").click()
        expect(page.get_by_text("Erased 2 submissions and 0 partial responses.")).to_be_visible()
        audit = page.get_by_role("region", name="Downloads and erasures")
        expect(audit.get_by_role("row").filter(has_text="Erased")).to_contain_text(OWNER)
        expect(audit.get_by_role("row").filter(has_text="Downloaded")).to_have_count(1)
        shoot(page, f"97-respondents-erased{width}")
        on_phone = windows.open(**ON_PHONE)
        on_phone.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
        on_phone.goto(page.url)
        expect(on_phone.get_by_role("region", name="Downloads and erasures")).to_be_visible()
        shoot(on_phone, "97-respondents-erased-phone")
        windows.close(on_phone)

    assert sorted(s["id"] for s in downloaded["submissions"]) == sorted(theirs)
    assert {s["answers"]["name"] for s in downloaded["submissions"]} == {"Ada Lovelace", "Ada L."}
    left = site.api("GET", f"/v1/forms/{form_id}/submissions").json()["data"]
    assert [s["id"] for s in left] == [kept]
    again = site.api("POST", "/v1/respondents/export", json={"email": ADA}).json()
    assert again["submissions"] == []


def test_the_respondents_page_passes_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    form_id = _publish(site)
    _submit(site, form_id, {"name": "Grace", "email": "grace@example.com"})
    page = windows.open(viewport=LAPTOP, bypass_csp=True)
    _sign_in(page, site, "/settings/respondents")
    assert axe_violations(page) == []
    page.get_by_label("Email address or value").fill("grace@example.com")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_text(re.compile("1 submission and 0 partial"))).to_be_visible()
    assert axe_violations(page) == []
