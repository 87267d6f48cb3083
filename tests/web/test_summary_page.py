"""A form's Summary page (charts of every question type, the API's filters)
and its shared report links (made by admins and owners, read by anyone
holding one, withholding small counts), driven as a browser without
JavaScript would."""

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.funnel import repository as funnel_repository
from formsapi.funnel import steps
from formsapi.kit.time import shift, utcnow
from formsapi.models import Form, Organization, Role
from formsapi.summary import held
from formsapi.summary import report as report_service
from tests.support.factories import create_form, create_org, create_submission
from tests.support.hostile_text import TABLE, percent_encoded
from tests.web.conftest import BASE_URL, Browser, BrowserFactory, SignedIn, add_member, path_of

BLOCKS: list[dict[str, Any]] = [
    {"type": "single_choice", "key": "plan", "title": "Plan", "allowOther": True,
     "options": [{"value": "free", "label": "Free"}, {"value": "team", "label": "Team"}]},
    {"type": "multiple_choice", "key": "features", "title": "Features",
     "options": [{"value": "api", "label": "API"}, {"value": "sso", "label": "SSO"}]},
    {"type": "dropdown", "key": "country", "title": "Country",
     "options": [{"value": "fr", "label": "France"}, {"value": "jp", "label": "Japan"}]},
    {"type": "yes_no", "key": "consent", "title": "Consent"},
    {"type": "rating", "key": "stars", "title": "Stars", "scale": 5},
    {"type": "scale", "key": "ease", "title": "Ease", "min": 1, "max": 3},
    {"type": "nps", "key": "nps", "title": "Recommend us"},
    {"type": "number", "key": "seats", "title": "Seats"},
    {"type": "ranking", "key": "order", "title": "Priorities",
     "options": [{"value": "speed", "label": "Speed"}, {"value": "price", "label": "Price"}]},
    {"type": "matrix", "key": "grid", "title": "Grid",
     "rows": [{"value": "speed", "label": "Speed"}, {"value": "price", "label": "Price"}],
     "columns": [{"value": "bad", "label": "Bad"}, {"value": "good", "label": "Good"}]},
    {"type": "long_text", "key": "story", "title": "Story"},
    {"type": "file", "key": "cv", "title": "CV"},
]  # fmt: skip
# Four respondents, the figures each chart must show worked out by hand.
ANSWERS: list[dict[str, Any]] = [
    {"plan": "free", "features": "api,sso", "country": "fr", "consent": "yes", "stars": 5,
     "ease": 3, "nps": 10, "seats": 10, "order": "speed,price", "grid.speed": "good",
     "grid.price": "bad", "story": "A secret story"},
    {"plan": "free", "features": "api", "country": "fr", "consent": "yes", "stars": 4,
     "ease": 3, "nps": 9, "seats": 20, "order": "speed,price", "grid.speed": "good"},
    {"plan": "team", "features": "sso", "country": "jp", "consent": "no", "stars": 4,
     "ease": 1, "nps": 7, "seats": 30, "order": "price,speed", "grid.speed": "bad"},
    {"plan": "other", "plan_other": "Enterprise", "consent": "yes", "stars": 1, "nps": 2,
     "seats": 100},
]  # fmt: skip


async def _form(session: AsyncSession, organization: Organization) -> Form:
    form = await create_form(session, organization, title="Survey", blocks=BLOCKS)
    now = utcnow()
    for index, answers in enumerate(ANSWERS):
        await create_submission(
            session, form, answers=answers, submitted_at=now - timedelta(hours=index)
        )
    return form


def _card(html: str, title: str) -> str:
    """The chart card of the question titled `title`, its text as read."""
    found = re.search(rf'<h3 id="q-\d+">{re.escape(title)}</h3>(.*?)</section>', html, re.S)
    assert found, f"no card for {title}"
    return unescape(re.sub(r"\s+", " ", found.group(1)))


def _cells(card: str) -> list[list[str]]:
    """The rows of a card's table view, header cells and data cells alike."""
    body = card.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


async def test_every_question_type_is_charted_with_its_figures(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(viewer)

    page = await browser.get(f"/forms/{form.id}/summary")
    html = page.text

    assert page.status_code == 200
    assert "<strong>4</strong> submissions match" in html
    plan = _card(html, "Plan")
    assert "4 answered · 0 skipped" in plan
    assert _cells(plan) == [["Free", "2", "50%"], ["Team", "1", "25%"], ["Other", "1", "25%"]]
    assert 'role="img" aria-label="Bar chart of 3 options: Free 2; Team 1; Other 1"' in plan
    assert _cells(_card(html, "Features")) == [["API", "2", "67%"], ["SSO", "2", "67%"]]
    assert _cells(_card(html, "Country")) == [["France", "2", "67%"], ["Japan", "1", "33%"]]
    assert _cells(_card(html, "Consent")) == [["Yes", "3", "75%"], ["No", "1", "25%"]]
    stars = _card(html, "Stars")
    assert _cells(stars) == [
        ["1", "1", "25%"], ["2", "0", "0%"], ["3", "0", "0%"], ["4", "2", "50%"], ["5", "1", "25%"]
    ]  # fmt: skip
    assert "<dt>Mean</dt><dd>3.50</dd>" in stars
    nps = _card(html, "Recommend us")
    # Two promoters, one passive, one detractor: (2 - 1) / 4 = 25.
    assert ">25</text>" in nps  # the gauge's score
    assert ["Promoters (9 or 10)", "2", "50%"] in _cells(nps)
    assert ["Detractors (0 to 6)", "1", "25%"] in _cells(nps)
    seats = _card(html, "Seats")
    assert _cells(seats)[:4] == [
        ["Minimum", "10"], ["Mean", "40"], ["Median", "25"], ["Maximum", "100"]
    ]  # fmt: skip
    assert _cells(_card(html, "Priorities")) == [["Speed", "1.33", "2"], ["Price", "1.67", "1"]]
    assert _cells(_card(html, "Grid")) == [["Speed", "1", "2", "3"], ["Price", "1", "0", "1"]]
    story = _card(html, "Story")
    assert "1 answered · 3 skipped" in story
    assert "<svg" not in story
    assert "not charted" in story  # the card says why it has no chart
    assert "A secret story" not in html  # a text's content is never charted
    assert "0 answered · 4 skipped" in _card(html, "CV")
    trend = html.split('id="trend-heading"', 1)[1].split("</section>", 1)[0]
    assert "Submissions per hour" in trend  # a form made today: its hours
    assert "4 in all" in trend
    assert html.count('role="img"') >= 11
    assert "Share a read-only report" not in html  # a viewer shares nothing
    assert f'href="/forms/{form.id}/summary"' in (await browser.get(f"/forms/{form.id}")).text


async def test_filters_narrow_every_chart_as_the_api_would(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(owner)
    # The page read unfiltered first: the form is read into memory for the
    # filters that follow (summary/held.py), which count from it.
    assert (await browser.get(f"/forms/{form.id}/summary")).status_code == 200
    await held.HELD.settled()
    assert held.HELD.copy_of(form.id) is not None

    chose = (await browser.get(f"/forms/{form.id}/summary?answer=consent:yes")).text
    recent = (await browser.get(f"/forms/{form.id}/summary", params={
        "since": (utcnow() - timedelta(minutes=90)).isoformat()
    })).text  # fmt: skip

    assert "<strong>3</strong> submissions match" in chose
    assert _cells(_card(chose, "Plan")) == [
        ["Free", "2", "67%"], ["Team", "0", "0%"], ["Other", "1", "33%"]
    ]  # fmt: skip
    assert "No trend with a hidden field or answer filter" in chose
    assert "<strong>2</strong> submissions match" in recent
    assert _cells(_card(recent, "Plan"))[0] == ["Free", "2", "100%"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"answer": "story:long"}, "'story' is answered with free text"),
        ({"answer": "plan:gold"}, "'plan' has no choice 'gold'"),
        ({"hidden": "utm:x"}, "The form has no hidden field 'utm'"),
        ({"since": "yesterday"}, "`since` must be an ISO 8601 timestamp"),
        ({"version": "7"}, "has no version 7"),
        ({"version": "-1"}, "`version` is a version number"),
        ({"since": "2026-12-01", "until": "2026-11-01"}, "`until` must be later than `since`"),
        ({"answer": "x" * 401}, None),
    ],
)
async def test_a_bad_filter_is_said_on_the_page_with_the_filters_kept(
    session: AsyncSession, signed_in: SignedIn, query: dict[str, str], message: str | None
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get(f"/forms/{form.id}/summary", params=query)

    assert 400 <= page.status_code < 500
    if message is not None:
        assert message in unescape(page.text)
        assert 'class="error" role="alert"' in page.text
        assert 'id="filters-heading"' in page.text  # the filters, to fix it


async def test_hostile_filter_text_is_refused_or_shown_as_text_never_a_500(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(owner)
    texts = [entry.text for entry in TABLE] + ['<script>alert(1)</script>"']

    answers = {}
    for text in texts:
        for name, value in (("hidden", text), ("answer", f"plan:{text}"), ("since", text)):
            query = f"{name}={percent_encoded(value)}&version={percent_encoded(text)}"
            answers[name, value] = await browser.get(f"/forms/{form.id}/summary?{query}")

    statuses = {key: page.status_code for key, page in answers.items()}
    assert statuses == dict.fromkeys(answers, 400)
    assert not any("<script>alert" in page.text for page in answers.values())


async def test_another_organizations_form_has_no_summary_and_takes_no_link(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    mine, theirs = await create_org(session), await create_org(session)
    owner = await add_member(session, mine, Role.owner)
    form = await _form(session, theirs)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get(f"/forms/{form.id}/summary")
    missing = await browser.get("/forms/frm_01nosuchform0000000000000000/summary")
    posted = await browser.post(f"/forms/{form.id}/reports", {"days": "7"})

    assert page.status_code == 404
    assert "There is no such form in this organization." in page.text
    assert page.text.replace(form.id, "ID") == missing.text.replace(
        "frm_01nosuchform0000000000000000", "ID"
    )
    assert posted.status_code == 303
    async with session.begin():
        assert await report_service.of_form(session, theirs.id, form.id) == []


async def _create_link(browser: Browser, form: Form, **fields: Any) -> str:
    """Create a report link from the Summary page: the address it shows once."""
    page = await browser.submit(f"/forms/{form.id}/reports", {"days": "7", **fields})
    found = re.search(r'id="report-link" type="text" readonly value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


@pytest.mark.parametrize("role", [Role.viewer, Role.editor])
async def test_viewers_and_editors_read_charts_but_cannot_share_them(
    session: AsyncSession, signed_in: SignedIn, role: str
) -> None:
    organization = await create_org(session)
    member = await add_member(session, organization, role)
    form = await _form(session, organization)
    link = await report_service.create(
        session, organization.id, form.id, None,
        expires_at=utcnow() + timedelta(days=1), hidden_questions=[], min_count=5, now=utcnow(),
    )  # fmt: skip
    await session.commit()
    browser = await signed_in(member)

    page = await browser.get(f"/forms/{form.id}/summary")
    created = await browser.post(f"/forms/{form.id}/reports", {"days": "7"})
    revoked = await browser.post(f"/forms/{form.id}/reports/{link.link.id}/revoke")
    after = await browser.get(created.headers["location"])

    assert page.status_code == 200
    assert "Share a read-only report" not in page.text
    assert created.status_code == revoked.status_code == 303
    assert "admins and owners share them" in after.text
    async with session.begin():
        links = await report_service.of_form(session, organization.id, form.id)
    assert [(found.id, found.revoked_at) for found in links] == [(link.link.id, None)]


async def test_creating_a_link_needs_the_sessions_csrf_token(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    without = await browser.post(f"/forms/{form.id}/reports", {"days": "7"}, csrf="")
    wrong = await browser.post(f"/forms/{form.id}/reports", {"days": "7"}, csrf="x" * 43)

    assert without.status_code == wrong.status_code == 403
    async with session.begin():
        assert await report_service.of_form(session, organization.id, form.id) == []


async def test_an_admin_shares_a_report_that_withholds_small_counts_and_hides_questions(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    admin = await add_member(session, organization, Role.admin)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(admin)

    url = await _create_link(browser, form, min_count="2", leave_out=["country"])
    anyone = browsers()
    report = await anyone.get(path_of(url))
    html = report.text

    assert url.startswith(f"{BASE_URL}/r/")
    assert report.status_code == 200
    assert "<h1>Survey</h1>" in html
    assert "<strong>4</strong> submissions" in html
    # k = 2: the options' counts of 1 (parts of those who answered) are withheld.
    assert _cells(_card(html, "Plan")) == [
        ["Free", "2", "50%"], ["Team", "withheld", "withheld"], ["Other", "withheld", "withheld"],
    ]  # fmt: skip
    assert html.count('<rect class="bar"') >= 1
    assert "Country" not in html  # left out
    assert _cells(_card(html, "Grid"))[1] == ["Price", "withheld", "withheld", "fewer than 2"]
    story = _card(html, "Story")
    assert "fewer than 2 answered" in story
    assert "A secret story" not in html
    assert "Enterprise" not in html
    for header, value in {
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-robots-tag": "noindex, nofollow",
        "x-frame-options": "DENY",
    }.items():
        assert report.headers[header] == value
    assert "frame-ancestors 'none'" in report.headers["content-security-policy"]
    assert "default-src 'none'" in report.headers["content-security-policy"]
    summary = (await browser.get(f"/forms/{form.id}/summary")).text
    assert 'id="report-link"' not in summary  # shown once
    assert '<td data-label="Left out">country</td>' in summary


async def test_a_report_with_fewer_submissions_than_k_shows_no_figure_from_them(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    url = await _create_link(await signed_in(owner), form)  # k = 5, four submissions

    html = (await browsers().get(path_of(url))).text

    assert "<strong>fewer than 5</strong> submissions" in html
    assert '<rect class="bar"' not in html
    assert '<path class="fill"' not in html  # no NPS drawn
    assert "<dt>NPS</dt><dd>from fewer than 5</dd>" in html
    assert "<dt>Mean</dt><dd>from fewer than 5</dd>" in html
    assert "<dt>Median</dt><dd>from fewer than 5</dd>" in html
    assert ">100<" not in _card(html, "Seats")
    assert "<dt>Minimum</dt><dd>withheld</dd>" in html  # one respondent's answer
    assert '<circle class="dot"' not in html  # each hour under 5: no point of the trend


async def test_a_revoked_expired_unknown_or_malformed_link_shows_the_same_404(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    browser = await signed_in(owner)
    revoked = await _create_link(browser, form)
    expiring = await _create_link(browser, form, days="1")
    summary = (await browser.get(f"/forms/{form.id}/summary")).text
    first = re.search(r'action="(/forms/[^"]+/revoke)"', summary)
    assert first  # the newest link first: `expiring`'s, then `revoked`'s
    forms = re.findall(r'action="(/forms/[^"]+/revoke)"', summary)
    await browser.submit(forms[1])
    anyone = browsers()

    answers = [await anyone.get(path_of(revoked))]
    assert (await anyone.get(path_of(expiring))).status_code == 200
    with shift(timedelta(days=1, seconds=1)):
        answers.append(await anyone.get(path_of(expiring)))
    answers.append(await anyone.get("/r/" + "A" * 43))
    answers.append(await anyone.get("/r/not-a-token"))
    answers.append(await anyone.get("/r/" + "%00" * 43))

    assert [a.status_code for a in answers] == [404] * 5
    assert len({a.text for a in answers}) == 1
    assert "Survey" not in answers[0].text
    assert answers[0].headers["cache-control"] == "no-store"
    assert answers[0].headers["x-robots-tag"] == "noindex, nofollow"


async def test_deleting_the_form_deletes_its_links(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization, title="Short-lived", blocks=BLOCKS)
    await session.commit()
    url = await _create_link(await signed_in(owner), form)
    async with session.begin():
        await form_service.delete(session, organization.id, form.id, delete_submissions=True)

    gone = await browsers().get(path_of(url))

    assert gone.status_code == 404
    async with session.begin():
        assert await report_service.of_form(session, organization.id, form.id) == []


async def test_a_report_takes_no_date_range_to_difference_by(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    # Two ranges a day apart would tell that day's answers, however each is withheld.
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await _form(session, organization)
    await session.commit()
    url = path_of(await _create_link(await signed_in(owner), form, min_count="2"))
    anyone = browsers()
    tomorrow = (utcnow() + timedelta(days=1)).date().isoformat()

    whole = await anyone.get(url)
    ranged = await anyone.get(url, params={"since": tomorrow, "until": "soon"})

    assert whole.status_code == ranged.status_code == 200
    assert "<strong>4</strong> submissions" in whole.text
    assert ranged.text == whole.text
    assert 'name="since"' not in whole.text


async def test_the_summary_page_shows_the_hosted_pages_funnel(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await _form(session, organization)
    hour = steps.hour_of(utcnow())
    counted = {steps.VIEW: 10, steps.START: 6, steps.DONE: 3, steps.took(40): 2, steps.took(95): 1}
    await funnel_repository.add(
        session,
        [((organization.id, form.id, hour, 1, step), count) for step, count in counted.items()],
    )
    await session.commit()
    browser = await signed_in(viewer)

    html = unescape(re.sub(r"\s+", " ", (await browser.get(f"/forms/{form.id}/summary")).text))
    answered = unescape((await browser.get(f"/forms/{form.id}/summary?answer=plan:free")).text)

    assert "Bar chart of the funnel: 10 views, 6 starts, 3 completions." in html
    assert "Completion rate <strong>50%</strong>" in html
    assert "Median time to complete <strong>40 s</strong>" in html
    assert "Funnel of the hosted page" not in answered  # it follows people, not answers
