"""Who may answer a form, in a real browser: Debian's Chromium, driven by
Playwright against a real `formsapi serve` process. A form's password is
asked before its first page (a wrong one said, a right one letting that
browser in), a form taking one response per browser says so on a second
visit, a form taken by invitation only refuses a visit without a link and
a link used once, and the form's page in the settings area sets it all.

Screenshots go to test-artifacts/screenshots/ (90-93), laptop and phone
widths, to be looked at.
"""

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, Windows
from tests.support.servers import PASSWORD

BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "email", "key": "mail", "title": "Your email"},
]
PIN = "2468"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(tmp_path_factory.mktemp("once"), "Board") as made:
        yield made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("9[0-3]-*.png") as launched:
        yield launched


def publish(site: Site, title: str, **settings: Any) -> str:
    created = site.api("POST", "/v1/forms", json={"title": title, "blocks": BLOCKS, **settings})
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


def test_a_password_first_then_one_response_per_browser(windows: Windows, site: Site) -> None:
    form_id = publish(site, "Staff survey", password=PIN, oneResponse={"by": "cookie"})
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_role("heading", name="Staff survey")).to_be_visible()
        expect(page.get_by_label("Your name")).to_have_count(0)
        shoot(page, f"90-password{width}")
        page.get_by_label("Password").fill("1357")
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_role("alert")).to_contain_text("not right")
        shoot(page, f"90-password-wrong{width}")
        page.get_by_label("Password").fill(PIN)
        page.get_by_role("button", name="Continue").click()
        page.get_by_label("Your name").fill(f"Ada{width}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_text("You have answered this form already")).to_be_visible()
        shoot(page, f"92-answered{width}")

    names = [
        s["answers"]["name"]
        for s in site.api("GET", f"/v1/forms/{form_id}/submissions").json()["data"]
    ]
    assert sorted(names) == ["Ada", "Ada-phone"]


def test_the_password_page_passes_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    form_id = publish(site, "Checked", password=PIN)
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    checker.goto(f"{site.url}/f/{form_id}")
    assert axe_violations(checker) == []
    checker.get_by_role("button", name="Continue").click()
    expect(checker.get_by_role("alert")).to_be_visible()
    assert axe_violations(checker) == []


def test_an_invitation_link_opens_the_form_once(windows: Windows, site: Site) -> None:
    form_id = publish(site, "Board vote", oneResponse={"by": "invitation"})
    made = site.api("POST", f"/v1/forms/{form_id}/invitations", json={"count": 2})
    links = [link["url"] for link in made.json()["data"]]
    for (width, page), link in zip(windows.at_each_width(), links, strict=True):
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_role("heading", name="By invitation only")).to_be_visible()
        shoot(page, f"91-invitation-only{width}")
        page.goto(link)
        page.get_by_label("Your name").fill(f"Grace{width}")
        shoot(page, f"91-invitation-form{width}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
        page.goto(link)
        expect(page.get_by_text("This invitation link was used already")).to_be_visible()
        shoot(page, f"91-invitation-used{width}")

    listed = site.api("GET", f"/v1/forms/{form_id}/invitations").json()["data"]
    assert [link["status"] for link in listed] == ["used", "used"]


def test_the_form_s_page_sets_who_may_answer(windows: Windows, site: Site) -> None:
    form_id = publish(site, "Lunch poll")
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/forms/{form_id}")
        page.get_by_label("Email").fill("owner@example.com")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        group = page.get_by_role("group", name="Responses per person")
        if not width:
            group.get_by_label(re.compile("One per email address")).check()
            page.get_by_label("Email question").select_option("mail")
            page.get_by_label(re.compile("Password before the first page")).fill(PIN)
            group.locator("xpath=ancestor::form").get_by_role("button", name="Save").click()
            expect(page.get_by_text("one response per email address")).to_be_visible()
        expect(group.get_by_label(re.compile("One per email address"))).to_be_checked()
        expect(page.get_by_text("one is set; type a new one to change it")).to_be_visible()
        group.scroll_into_view_if_needed()
        shoot(page, f"93-respondents-settings{width}")

    detail = site.api("GET", f"/v1/forms/{form_id}").json()
    assert detail["oneResponse"] == {"by": "email", "question": "mail"}
    assert detail["passwordRequired"] is True
