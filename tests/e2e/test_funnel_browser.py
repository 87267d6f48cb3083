"""The funnel's start as a browser sends it: Debian's Chromium driven by
Playwright against a real `formsapi serve` process. Loading the hosted page
and typing sends exactly one start beacon (under the page's own policy,
which lets its script reach only its own origin), and the post that
follows counts no second start.

Screenshots go to test-artifacts/screenshots/ as 76-78-funnel*.png, at laptop
and phone widths, to be looked at.
"""

import functools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Request, expect

from tests.conftest import service_unavailable
from tests.e2e.owned import Site, owned_site
from tests.e2e.test_browser import AXE, axe_violations, chromium, shoot
from tests.e2e.windows import LAPTOP, Windows

FORM: dict[str, Any] = {
    "title": "Tell us about your team",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "long_text", "key": "goal", "title": "What should the team achieve?"},
        {"type": "page_break", "key": "size"},
        {"type": "number", "key": "people", "title": "How many people?", "required": True},
    ],
}
# How often the server writes the views and starts it counted.
FLUSH = 0.3


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A new organization with one owner and a key, on a server of its own."""
    with owned_site(
        tmp_path_factory.mktemp("funnel"), "Team survey", funnel_flush_seconds=str(FLUSH)
    ) as made:
        yield made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("7?-funnel*.png") as launched:
        yield launched


def _funnel(site: Site, form_id: str, views: int) -> dict[str, Any]:
    """The funnel once the server has written the views it counted."""
    deadline = time.monotonic() + 10
    while True:
        funnel: dict[str, Any] = site.api("GET", f"/v1/forms/{form_id}/summary/funnel").json()
        if funnel["views"] >= views or time.monotonic() > deadline:
            return funnel
        time.sleep(FLUSH)


def _beacon(beacons: list[Request], request: Request) -> None:
    if request.url.endswith("/start"):
        beacons.append(request)


def test_loading_the_page_and_typing_sends_exactly_one_start(windows: Windows, site: Site) -> None:
    created = site.api("POST", "/v1/forms", json=FORM)
    assert created.status_code == 201, created.text
    form_id = created.json()["id"]
    assert site.api("PATCH", f"/v1/forms/{form_id}", json={"status": "published"}).is_success

    for width, page in windows.at_each_width():
        beacons: list[Request] = []
        page.on("request", functools.partial(_beacon, beacons))
        page.goto(f"{site.server.base_url}/f/{form_id}")
        shoot(page, f"76-funnel-first-page{width}")
        assert beacons == []  # a view is not a start

        page.get_by_label("Your name").press_sequentially("Ada Lovelace")
        page.get_by_label("What should the team achieve?").fill("Ship the engine")
        expect(page.locator("input[name=_started]")).to_have_value("1")
        page.wait_for_timeout(300)  # a second beacon would have left by now
        assert len(beacons) == 1
        assert beacons[0].method == "POST"
        assert "_stamp=" in (beacons[0].post_data or "")
        shoot(page, f"77-funnel-typed{width}")

        page.get_by_role("button", name="Next").click()
        expect(page.get_by_label("How many people?")).to_be_visible()
        page.get_by_label("How many people?").fill("12")
        assert len(beacons) == 1  # the page after says the start was counted
        shoot(page, f"78-funnel-second-page{width}")
        page.close()  # and its listener

    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    # Past the page's policy only to inject axe-core (a view more).
    checking = windows.open(viewport=LAPTOP, bypass_csp=True)
    checking.goto(f"{site.server.base_url}/f/{form_id}")
    assert axe_violations(checking) == []

    funnel = _funnel(site, form_id, views=3)
    assert (funnel["views"], funnel["starts"]) == (3, 2)
    assert [(p["page"], p["reached"], p["stopped"]) for p in funnel["pages"]] == [
        (1, 2, 0),
        (2, 2, 2),
    ]
