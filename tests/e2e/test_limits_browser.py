"""A form's opening, closing, limit and quotas in Chromium, against a real
server: an owner schedules a form on its Status and settings panel, the
public page says it is not open yet, a full option shows disabled and
cannot be chosen, and a closed form shows its message; the pages pass axe.

Screenshots go to test-artifacts/screenshots/ (86-89), laptop and phone
widths."""

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from formsapi.kit.time import isoformat_z, utcnow
from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, Windows
from tests.support.servers import PASSWORD

WORKSHOPS = [
    {"value": "tue", "label": "Tuesday workshop"},
    {"value": "wed", "label": "Wednesday workshop"},
]
FORM: dict[str, Any] = {
    "title": "Workshop sign-up",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {
            "type": "single_choice",
            "key": "workshop",
            "title": "Workshop",
            "required": True,
            "options": WORKSHOPS,
        },
    ],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(
        tmp_path_factory.mktemp("limits"),
        "Workshops",
        ("forms:read", "forms:write", "submissions:read", "submissions:write"),
    ) as made:
        yield made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("8[6-9]-limits*.png") as launched:
        yield launched


def _published(site: Site, **settings: Any) -> str:
    created = site.api("POST", "/v1/forms", json={**FORM, **settings})
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


def test_an_owner_schedules_a_form_on_its_panel(windows: Windows, site: Site) -> None:
    form_id = _published(site)
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/forms/{form_id}")
        page.get_by_label("Email").fill("owner@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        if not width:
            page.get_by_label("Opens at").fill("2099-03-01T09:00")
            page.get_by_label("Closes at").fill("2099-03-08T17:30")
            page.get_by_label("Maximum submissions").fill("50")
            page.get_by_label("Message before opening").fill(
                "Sign-up opens on 1 March at 09:00 UTC."
            )
            page.get_by_label("Message after closing").fill("All 50 places are taken, thank you.")
            page.get_by_label("Maximum submissions").locator("xpath=ancestor::form").get_by_role(
                "button", name="Save"
            ).click()
            expect(page.get_by_text("Saved. The form is closed now.")).to_be_visible()
        expect(page.get_by_label("Maximum submissions")).to_have_value("50")
        page.get_by_role("group", name="Opening, closing and limit").scroll_into_view_if_needed()
        shoot(page, f"86-limits-settings{width}")

    detail = site.api("GET", f"/v1/forms/{form_id}").json()
    assert (detail["status"], detail["maxSubmissions"]) == ("closed", 50)
    assert detail["opensAt"] == "2099-03-01T09:00:00.000Z"
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_text("Sign-up opens on 1 March at 09:00 UTC.")).to_be_visible()
        expect(page.get_by_label("Your name")).to_have_count(0)
        shoot(page, f"87-limits-before-opening{width}")


def test_a_full_option_shows_disabled_and_cannot_be_chosen(windows: Windows, site: Site) -> None:
    quota = {"question": "workshop", "option": "tue", "limit": 1, "action": "closeOption"}
    form_id = _published(site, quotas=[quota])
    answers = {"name": "Ada", "workshop": "tue"}
    taken = site.api("POST", f"/v1/forms/{form_id}/submissions", json={"answers": answers})
    assert taken.status_code == 201, taken.text
    for width, page in windows.at_each_width():
        page.goto(f"{site.url}/f/{form_id}")
        tuesday = page.get_by_role("radio", name="Tuesday workshop (full)")
        expect(tuesday).to_be_disabled()
        page.get_by_label("Your name").fill(f"Bo{width}")
        page.get_by_role("radio", name="Wednesday workshop").check()
        shoot(page, f"88-limits-full-option{width}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Thank you")).to_be_visible()

    detail = site.api("GET", f"/v1/forms/{form_id}").json()
    assert (detail["responseCount"], detail["quotas"][0]["remaining"]) == (3, 0)


def test_a_closed_form_shows_its_message(windows: Windows, site: Site) -> None:
    closes = isoformat_z(utcnow() + timedelta(hours=1))
    form_id = _published(site, closesAt=closes, messageAfterClosing="Sign-up has closed.")
    closed = site.api("PATCH", f"/v1/forms/{form_id}", json={"maxSubmissions": 1})
    assert closed.status_code == 200
    answers = {"name": "Ada", "workshop": "wed"}
    site.api("POST", f"/v1/forms/{form_id}/submissions", json={"answers": answers})
    for width, page in windows.at_each_width():
        response = page.goto(f"{site.url}/f/{form_id}")
        assert response is not None
        assert response.status == 410
        expect(page.get_by_text("Sign-up has closed.")).to_be_visible()
        shoot(page, f"89-limits-closed{width}")


def test_the_full_option_and_waiting_pages_pass_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    quota = {"question": "workshop", "option": "wed", "limit": 1}
    full = _published(site, quotas=[quota])
    answers = {"name": "Ada", "workshop": "wed"}
    site.api("POST", f"/v1/forms/{full}/submissions", json={"answers": answers})
    waiting = _published(site, opensAt=isoformat_z(utcnow() + timedelta(days=1)))
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    for form_id in (full, waiting):
        checker.goto(f"{site.url}/f/{form_id}")
        assert axe_violations(checker) == []
