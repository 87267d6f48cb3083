"""A form's Summary page and its shared report in Debian's Chromium, driven
by Playwright against the README's `formsapi serve --demo`: the charts at
laptop and phone widths with their tables opened, a report link made,
opened by someone signed out (small counts withheld on the page), then
revoked; an expired link shows nothing. Screenshots go to
test-artifacts/screenshots/7x-*, and axe-core finds nothing serious.

A file of its own: the suite runs files side by side."""

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select

from formsapi.db.engine import create_engine, dispose
from formsapi.db.session import create_sessionmaker, session_scope
from formsapi.kit.time import utcnow
from formsapi.models import Form
from formsapi.summary import report as report_service
from formsapi.tenancy import unscoped
from tests.conftest import service_unavailable
from tests.e2e.test_browser import (
    AXE,
    Site,
    api,
    axe_violations,
    chromium,
    generate_key,
    publish,
    shoot,
    shoot_at_both_widths,
    sign_in,
    site,  # noqa: F401 - the module's server, as the settings area's tests have it
)
from tests.e2e.windows import LAPTOP, Windows

CHARTED = {
    "title": "Team retro",
    "blocks": [
        {"type": "single_choice", "key": "plan", "title": "Plan", "options": [
            {"value": "team", "label": "Team"}, {"value": "free", "label": "Free"}]},
        {"type": "rating", "key": "stars", "title": "How was the sprint?", "scale": 5},
        {"type": "nps", "key": "nps", "title": "Would you recommend the team?"},
        {"type": "number", "key": "hours", "title": "Hours in meetings"},
        {"type": "ranking", "key": "focus", "title": "What to improve first", "options": [
            {"value": "speed", "label": "Speed"}, {"value": "quality", "label": "Quality"},
            {"value": "docs", "label": "Documentation"}]},
        {"type": "matrix", "key": "grid", "title": "How did these go?",
         "rows": [{"value": "planning", "label": "Planning"},
                  {"value": "review", "label": "Review"}],
         "columns": [{"value": "bad", "label": "Badly"}, {"value": "ok", "label": "OK"},
                     {"value": "good", "label": "Well"}]},
        {"type": "long_text", "key": "notes", "title": "Anything else?"},
    ],
}  # fmt: skip
# Six on the team plan, two on the free one: with k = 5 the report withholds "Free".
RESPONSES = [
    {"plan": "team" if n < 6 else "free", "stars": 1 + n % 5, "nps": 10 - n, "hours": 2 + n,
     "focus": ["speed,quality,docs", "quality,speed,docs"][n % 2],
     "grid.planning": ["good", "ok", "bad"][n % 3], "grid.review": "good",
     "notes": f"private note {n}"}
    for n in range(8)
]  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("7?-*.png") as launched:
        yield launched


def _charted_form(page: Page, where: Site) -> str:
    secret = generate_key(page, where, "charts", "forms:write", "submissions:write")
    form_id = publish(where, secret, CHARTED)
    for answers in RESPONSES:
        posted = api(where, "POST", f"/v1/forms/{form_id}/submissions", secret, json={
            "answers": answers
        })  # fmt: skip
        assert posted.status_code == 201, posted.text
    return form_id


def test_a_forms_summary_is_charted_shared_withheld_and_revoked(
    windows: Windows,
    site: Site,  # noqa: F811
) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    # The page runs no script: axe is injected past its CSP.
    page = windows.open(viewport=LAPTOP, bypass_csp=True)
    sign_in(page, site, site.email, site.password)
    form_id = _charted_form(page, site)
    page.goto(f"{site.url}/forms/{form_id}")
    page.get_by_role("link", name="Summary").click()

    expect(page.get_by_role("heading", name="Summary", exact=True)).to_be_visible()
    expect(page.locator(".sub", has_text="8 submissions match")).to_be_visible()
    for name in ("^Bar chart of 2 options: Team 6; Free 2", "^NPS gauge", "^Line chart .* hour"):
        expect(page.get_by_role("img", name=re.compile(name))).to_be_visible()
    shoot_at_both_widths(windows, page, "70-summary")
    assert axe_violations(page) == []
    for table in page.locator("details.table-view summary").all():
        table.click()  # every table view opened: what a screen reader reads
    plan = page.get_by_role("region", name="Plan: answers per option")
    expect(plan.get_by_role("row", name=re.compile(r"Free 2 25%"))).to_be_visible()
    shoot(page, "71-summary-tables")
    assert axe_violations(page) == []

    page.get_by_role("textbox", name=re.compile("^Answer")).fill("plan:free")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".sub", has_text="2 submissions match")).to_be_visible()
    page.get_by_role("textbox", name=re.compile("^Answer")).fill("notes:x")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_role("alert")).to_contain_text("'notes' is answered with free text")
    shoot(page, "72-summary-bad-filter")
    page.get_by_role("link", name="Clear").click()

    page.get_by_role(
        "checkbox", name=re.compile("^What to improve first")
    ).check()  # left out of the report
    page.get_by_role("button", name="Create link").click()
    link = page.get_by_role("textbox", name="Report link").input_value()
    assert re.fullmatch(rf"{re.escape(site.url)}/r/[A-Za-z0-9_-]{{43}}", link)
    shoot(page, "73-summary-link")

    anyone = windows.open(viewport=LAPTOP, bypass_csp=True)
    anyone.goto(link)
    expect(anyone.get_by_role("heading", name="Team retro")).to_be_visible()
    withheld = anyone.get_by_role("img", name=re.compile("Team withheld; Free withheld"))
    expect(withheld).to_be_visible()
    expect(anyone.get_by_text("What to improve first")).to_have_count(0)
    expect(anyone.get_by_text("private note")).to_have_count(0)
    anyone.locator("details.table-view summary").first.click()
    shoot_at_both_widths(windows, anyone, "74-report")
    assert axe_violations(anyone) == []

    page.reload()
    page.get_by_role("button", name=re.compile("^Revoke")).click()
    expect(page.locator(".notice")).to_contain_text("revoked")
    anyone.goto(link)
    expect(anyone.get_by_role("heading", name="Report not found")).to_be_visible()
    expect(anyone.get_by_text("Team retro")).to_have_count(0)
    shoot_at_both_widths(windows, anyone, "75-report-revoked")

    # One made a week ago for six days, through the service: expired yesterday.
    # (In a thread of its own: Playwright's loop runs in this one.)
    with ThreadPoolExecutor(1) as thread:
        expired = thread.submit(asyncio.run, _expired_link(site, form_id)).result(30)
    anyone.goto(f"{site.url}/r/{expired}")
    expect(anyone.get_by_role("heading", name="Report not found")).to_be_visible()
    expect(anyone.get_by_text("Team retro")).to_have_count(0)


async def _expired_link(where: Site, form_id: str) -> str:
    engine = create_engine(f"sqlite:///{where.directory / 'formsapi.db'}")
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            organization_id = await session.scalar(
                unscoped(select(Form.organization_id).where(Form.id == form_id), "the test's form")
            )
            assert organization_id is not None
            week_ago = utcnow() - timedelta(days=7)
            created = await report_service.create(
                session, organization_id, form_id, None,
                expires_at=week_ago + timedelta(days=6), hidden_questions=[], min_count=5,
                now=week_ago,
            )  # fmt: skip
            return created.token
    finally:
        await dispose(engine)
