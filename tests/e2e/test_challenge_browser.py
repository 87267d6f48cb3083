"""A form's proof-of-work challenge in a real browser: Debian's Chromium,
driven by Playwright against a real `formsapi serve` process with the
default cost, fetches the challenge, solves it in the widget's worker under
the page's Content-Security-Policy (scripts and workers from the service
only, no inline script or style), and its answers are taken; with
JavaScript off the page says it needs it, and a post without a solution is
refused and says why.

Screenshots go to test-artifacts/screenshots/ (85-...), laptop and phone
widths, to be looked at.
"""

import functools
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, expect

from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, Windows
from tests.support.honeypot import honeypot_in
from tests.support.servers import PASSWORD

FORM: dict[str, Any] = {
    "title": "Contact us",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "long_text", "key": "message", "title": "Message"},
    ],
    "challenge": True,
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(tmp_path_factory.mktemp("challenge"), "Contact") as made:
        yield made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("85-challenge*.png") as launched:
        yield launched


def publish(site: Site) -> str:
    created = site.api("POST", "/v1/forms", json=FORM)
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


def test_chromium_solves_the_challenge_under_the_page_s_policy_and_the_answers_are_taken(
    windows: Windows, site: Site
) -> None:
    form_id = publish(site)
    for width, page in windows.at_each_width():
        console: list[str] = []
        page.on("console", functools.partial(_keep, console))
        workers: list[str] = []
        page.on("worker", lambda worker: workers.append(worker.url))  # noqa: B023

        page.goto(f"{site.url}/f/{form_id}")
        page.get_by_label("Your name").fill(f"Ada{width}")
        page.get_by_label("Message").fill("Hello from a real browser.")
        shoot(page, f"85-challenge-form{width}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Thank you")).to_be_visible(timeout=60_000)
        shoot(page, f"85-challenge-sent{width}")

        # The proof of work ran in a worker loaded from the service itself,
        # and nothing on the page was refused by its policy.
        assert workers, "no worker was started"
        assert all(url == f"{site.url}/f/static/altcha-worker.js" for url in workers), workers
        assert [m for m in console if "Content Security Policy" in m] == []
        page.close()  # and its listeners

    names = [
        s["answers"]["name"]
        for s in site.api("GET", f"/v1/forms/{form_id}/submissions").json()["data"]
    ]
    assert sorted(names) == ["Ada", "Ada-phone"]
    refused = site.api("GET", f"/v1/forms/{form_id}/refusals").json()["data"]
    assert refused == []


def _keep(into: list[str], message: ConsoleMessage) -> None:
    into.append(f"{message.type}: {message.text}")


def test_without_javascript_the_page_says_it_needs_it_and_a_post_is_refused(
    windows: Windows, site: Site
) -> None:
    form_id = publish(site)
    for width, page in windows.at_each_width(java_script_enabled=False):
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_text("This form needs JavaScript")).to_be_visible()
        shoot(page, f"85-challenge-no-script{width}")
        page.get_by_label("Your name").fill("Bo")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Your answers were not sent")).to_be_visible()
        expect(page.get_by_text(re.compile("needs JavaScript"))).to_be_visible()
        shoot(page, f"85-challenge-refused{width}")

    assert site.api("GET", f"/v1/forms/{form_id}").json()["responseCount"] == 0
    refused = site.api("GET", f"/v1/forms/{form_id}/refusals").json()["data"]
    assert [(r["reason"], r["count"]) for r in refused] == [("challenge-missing", 2)]


def test_the_page_with_its_challenge_passes_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    form_id = publish(site)
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    checker.goto(f"{site.url}/f/{form_id}")
    expect(checker.locator("altcha-widget input[type=checkbox]")).to_be_attached()

    assert axe_violations(checker) == []


def test_the_form_s_page_turns_the_proof_of_work_on_and_shows_the_refusals(
    windows: Windows, site: Site
) -> None:
    form_id = publish(site)
    site.api("PATCH", f"/v1/forms/{form_id}", json={"challenge": False})
    honeypot = honeypot_in(httpx.get(f"{site.url}/f/{form_id}", timeout=10).text)
    for _ in range(3):  # bots filling the honeypot
        httpx.post(f"{site.url}/f/{form_id}", data={"name": "Bot", honeypot: "x"}, timeout=10)
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/forms/{form_id}")
        page.get_by_label("Email").fill("owner@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        box = page.get_by_label("Ask browsers for a proof of work before taking answers")
        if not width:
            expect(box).not_to_be_checked()
            box.check()
            box.locator("xpath=ancestor::form").get_by_role("button", name="Save").click()
            expect(page.get_by_text("now asks browsers for a proof of work")).to_be_visible()
        expect(box).to_be_checked()
        refusals = page.get_by_role("region", name=re.compile("Refused as spam"))
        row = refusals.get_by_role("row").filter(has_text="honeypot")
        expect(row).to_be_visible()
        expect(row.locator("td.num")).to_have_text("3")
        refusals.scroll_into_view_if_needed()
        shoot(page, f"85-challenge-settings{width}")

    assert site.api("GET", f"/v1/forms/{form_id}").json()["challenge"] is True
