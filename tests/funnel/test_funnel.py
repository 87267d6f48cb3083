"""GET /v1/forms/{formId}/summary/funnel: a scripted set of respondents
driven through the real hosted page as a browser without JavaScript would
(and one with it, by its beacon), and the funnel counted exactly: views,
starts, completions, each page's arrivals and drop-offs, the median time to
complete against one worked out here; ranges, versions, isolation and bad
input."""

import re
import statistics
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.funnel import service as funnel_service
from formsapi.funnel.steps import rounded_seconds
from formsapi.hosted import stamp
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import isoformat_z, shift, utcnow
from formsapi.models import FunnelCount, Organization, StartedStamp
from formsapi.services import services_of
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.hosted.test_logic_pages import _post
from tests.support.contract import Contract
from tests.support.factories import create_key, create_org, publish_over_api

FORM: dict[str, Any] = {
    "title": "Three pages",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Name", "required": True},
        {"type": "page_break", "key": "work"},
        {"type": "short_text", "key": "company", "title": "Company", "required": True},
        {"type": "page_break", "key": "contact"},
        {"type": "email", "key": "email", "title": "Email", "required": True},
    ],
}
PAGE_ANSWERS = [{"name": "Ada"}, {"company": "Acme"}, {"email": "ada@example.com"}]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000, secret_key=["f" * 32])


@pytest.fixture
async def served(
    engine: AsyncEngine, settings: Settings, contract: Contract
) -> AsyncIterator[tuple[FastAPI, Api]]:
    """The app (to flush its held views and starts) and a client on it."""
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield app, Api(client, settings, contract)
    await release(app)


async def _funnel(api: Api, form_id: str, secret: str, **query: Any) -> dict[str, Any]:
    response = await api.get(f"/v1/forms/{form_id}/summary/funnel", secret, params=query)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


class Respondent:
    """One person on the hosted page, posting as a browser without script."""

    def __init__(self, api: Api, form_id: str) -> None:
        self.api, self.url = api, f"/f/{form_id}"
        self.page = ""

    async def open(self, **headers: str) -> None:
        response = await self.api.get(self.url, headers=headers)
        assert response.status_code == 200, response.text
        self.page = response.text

    async def post(self, fields: dict[str, str], go: str = "next") -> httpx.Response:
        response = await self.api.post(self.url, data=_post(self.page, fields, go))
        if response.status_code in (200, 422):
            self.page = response.text
        return response

    async def next(self, page: int) -> None:
        response = await self.post(PAGE_ANSWERS[page])
        expected = 303 if page == len(PAGE_ANSWERS) - 1 else 200
        assert response.status_code == expected, response.text


async def test_the_funnel_counts_each_step_of_a_scripted_set_of_respondents(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    durations = []

    # A and B go through every page and send; C stops on page 2.
    for seconds in (40, 130):
        finisher = Respondent(api, form_id)
        await finisher.open()
        with shift(timedelta(seconds=seconds)):
            for page in range(3):
                await finisher.next(page)
        durations.append(seconds)
    stopper = Respondent(api, form_id)
    await stopper.open()
    await stopper.next(0)

    # D saves on page 2, comes back through the link and sends: timed from
    # the first save (the link's page carries no earlier stamp).
    returning = Respondent(api, form_id)
    await returning.open()
    with shift(timedelta(seconds=10)):
        await returning.next(0)
        saved = await returning.post({}, go="save")
    link = re.findall(rf"/f/{form_id}/resume/[\w-]+", saved.text)[0]
    with shift(timedelta(seconds=200)):
        resumed = await api.get(link)
        assert resumed.status_code == 200
        returning.page = resumed.text
        await returning.next(1)
        await returning.next(2)
    durations.append(190)

    # E only looks; F leaves page 1 after an error, counted as one start.
    await Respondent(api, form_id).open()
    failing = Respondent(api, form_id)
    await failing.open()
    assert (await failing.post({})).status_code == 422
    assert (await failing.post({})).status_code == 422

    # G errs, goes on, back and on again: one start, page 2 reached once.
    wavering = Respondent(api, form_id)
    await wavering.open()
    assert (await wavering.post({})).status_code == 422
    await wavering.next(0)
    assert (await wavering.post({}, go="back")).status_code == 200
    await wavering.next(0)

    # H's page runs its script: the beacon is its start, and its post
    # (which then says so) counts no second one.
    scripted = Respondent(api, form_id)
    await scripted.open()
    [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', scripted.page)
    beacon = await api.post(f"/f/{form_id}/start", data={"_stamp": stamp})
    assert beacon.status_code == 204
    scripted.page = scripted.page.replace(
        '<input type="hidden" name="_started" value="">',
        '<input type="hidden" name="_started" value="1">',
    )
    await scripted.next(0)

    # Neither a robot's load nor a HEAD is a view.
    await Respondent(api, form_id).open(**{"user-agent": "Mozilla/5.0 (compatible; Googlebot/2.1)"})
    assert (await api.client.head(f"/f/{form_id}")).status_code in (200, 405)

    await services_of(app).funnel.flush()
    funnel = await _funnel(api, form_id, secret)

    assert funnel["views"] == 8
    assert funnel["starts"] == 7
    assert funnel["completions"] == 3
    assert funnel["completionRate"] == round(3 / 7, 4)
    assert funnel["timedCompletions"] == 3
    expected_median = statistics.median(rounded_seconds(s) for s in durations)
    assert funnel["medianSecondsToComplete"] == expected_median == 130
    assert funnel["pages"] == [
        {"page": 1, "reached": 7, "stopped": 1, "dropOffRate": round(1 / 7, 4)},
        {"page": 2, "reached": 6, "stopped": 3, "dropOffRate": 0.5},
        {"page": 3, "reached": 3, "stopped": 0, "dropOffRate": 0.0},
    ]
    assert funnel["hours"] is None
    # Sent over the API, answers are no part of the hosted page's funnel.
    posted = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Bo", "company": "B", "email": "bo@example.com"}},
    )
    assert posted.status_code == 201
    assert (await _funnel(api, form_id, secret))["completions"] == 3


async def test_a_single_page_form_counts_its_sends_and_their_time(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    single = {"title": "One page", "blocks": [FORM["blocks"][0]]}
    form_id, secret, _ = await publish_over_api(api, session, single)
    for seconds in (5, 7, 9, 11):
        respondent = Respondent(api, form_id)
        await respondent.open()
        with shift(timedelta(seconds=seconds)):
            assert (await respondent.post({"name": "Ada"})).status_code == 303
    left = Respondent(api, form_id)
    await left.open()
    await services_of(app).funnel.flush()

    funnel = await _funnel(api, form_id, secret)

    assert (funnel["views"], funnel["starts"], funnel["completions"]) == (5, 4, 4)
    assert funnel["medianSecondsToComplete"] == 8.0  # between 7 and 9
    assert funnel["pages"] == [{"page": 1, "reached": 4, "stopped": 0, "dropOffRate": 0.0}]


async def test_a_forged_or_missing_stamp_gives_no_duration_and_no_error(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    single = {"title": "One page", "blocks": [FORM["blocks"][0]]}
    form_id, secret, _ = await publish_over_api(api, session, single)
    respondent = Respondent(api, form_id)
    await respondent.open()
    [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', respondent.page)
    millis, _, signature = stamp.partition(".")
    earlier = f"{int(millis) - 3_600_000}.{signature}"  # an hour more, same signature
    for forged in (earlier, "", "x" * 5000, f"{millis}.", "1.2.3", f"-{millis}.{signature}"):
        page = respondent.page.replace(stamp, forged)
        posted = await api.post(f"/f/{form_id}", data=_post(page, {"name": "Ada"}))
        assert posted.status_code == 303
        beacon = await api.post(f"/f/{form_id}/start", data={"_stamp": forged})
        assert beacon.status_code == (413 if len(forged) > 200 else 204)
    await services_of(app).funnel.flush()

    funnel = await _funnel(api, form_id, secret)

    assert funnel["completions"] == 6
    assert funnel["starts"] == 6  # the posts', without script; not the beacons'
    assert funnel["timedCompletions"] == 0
    assert funnel["medianSecondsToComplete"] is None


async def test_a_range_counts_the_respondents_first_served_within_its_hours(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    # Three days ago two respondents arrive; one finishes today.
    with shift(timedelta(days=-3)):
        old = [Respondent(api, form_id) for _ in range(2)]
        for respondent in old:
            await respondent.open()
            await respondent.next(0)
    for page in (1, 2):
        await old[0].next(page)
    recent = Respondent(api, form_id)
    await recent.open()
    await services_of(app).funnel.flush()
    now = utcnow()

    earlier = await _funnel(
        api, form_id, secret, until=isoformat_z(now - timedelta(days=1)), version=1
    )
    today = await _funnel(api, form_id, secret, since=isoformat_z(now - timedelta(hours=1)))

    assert (earlier["views"], earlier["starts"], earlier["completions"]) == (2, 2, 1)
    assert [p["stopped"] for p in earlier["pages"]] == [0, 1, 0]
    assert (today["views"], today["starts"], today["completions"]) == (1, 0, 0)
    assert today["completionRate"] is None
    hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    assert today["hours"]["since"] == isoformat_z(hour)
    assert today["filters"]["since"] == isoformat_z(now - timedelta(hours=1))
    none = await _funnel(
        api, form_id, secret, since="2001-01-01T00:00:00Z", until="2001-01-02T00:00:00Z"
    )
    assert (none["views"], none["medianSecondsToComplete"], none["pages"][0]["dropOffRate"]) == (
        0,
        None,
        None,
    )
    ends = await _funnel(api, form_id, secret, since="9999-12-31T23:59:59Z")
    assert ends["views"] == 0


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"since": "yesterday"}, "'since'"),
        ({"until": "2026-13-01T00:00:00Z"}, "'until'"),
        ({"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"}, "later"),
        ({"since": "2026-11-02T00:00:00Z", "until": "2026-11-02T00:00:00Z"}, "later"),
        ({"version": 0}, "'version'"),
        ({"version": "x" * 500}, "'version'"),
    ],
)
async def test_bad_filters_are_400_problems(
    api: Api, session: AsyncSession, query: dict[str, Any], detail: str
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    response = await api.get(f"/v1/forms/{form_id}/summary/funnel", secret, params=query)

    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert detail in response.text


async def test_another_organizations_form_and_a_missing_version_are_404(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    other = await create_org(session)
    _, other_secret = await create_key(session, other)
    await session.commit()

    theirs = await api.get(f"/v1/forms/{form_id}/summary/funnel", other_secret)
    missing = await api.get("/v1/forms/frm_01JAAAAAAAAAAAAAAAAAAAAAAA/summary/funnel", other_secret)
    no_version = await api.get(f"/v1/forms/{form_id}/summary/funnel?version=9", secret)

    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["title"] == missing.json()["title"]
    assert no_version.status_code == 404


async def test_the_beacon_takes_no_body_tricks(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    respondent = Respondent(api, form_id)
    await respondent.open()
    [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', respondent.page)
    url = f"/f/{form_id}/start"

    large = await api.post(url, content=b"_stamp=" + stamp.encode() + b"&" + b"x" * 400)
    many = await api.post(url, content="&".join(["_stamp=" + stamp] + ["a=b"] * 8))
    as_json = await api.post(url, json={"_stamp": stamp})

    async def streamed() -> AsyncIterator[bytes]:
        yield f"_stamp={stamp}".encode()

    chunked = await api.post(url, content=streamed())
    elsewhere = await api.post("/f/frm_01JAAAAAAAAAAAAAAAAAAAAAAA/start", data={"_stamp": stamp})
    other_form, _, _ = await publish_over_api(api, session, FORM)
    replayed = await api.post(f"/f/{other_form}/start", data={"_stamp": stamp})
    await services_of(app).funnel.flush()

    assert large.status_code == 413
    assert many.status_code == 400
    assert as_json.status_code == 204
    assert chunked.status_code == 411
    assert elsewhere.status_code == 404
    assert replayed.status_code == 204
    assert (await _funnel(api, form_id, secret))["starts"] == 0
    assert "set-cookie" not in as_json.headers


async def test_a_stamp_counts_one_start_however_often_it_is_posted(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    respondent = Respondent(api, form_id)
    await respondent.open()
    [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', respondent.page)

    for _ in range(25):
        beacon = await api.post(f"/f/{form_id}/start", data={"_stamp": stamp})
        assert beacon.status_code == 204
    await services_of(app).funnel.flush()
    for _ in range(25):  # and after the flush, as a later replay would
        await api.post(f"/f/{form_id}/start", data={"_stamp": stamp})
    # Its posts say nothing of the beacon (as a page without script): each
    # could be a first one.
    await respondent.next(0)
    for _ in range(3):
        assert (await respondent.post({}, go="back")).status_code == 200
        respondent.page = respondent.page.replace(
            '<input type="hidden" name="_started" value="1">',
            '<input type="hidden" name="_started" value="">',
        )
    await services_of(app).funnel.flush()

    funnel = await _funnel(api, form_id, secret)
    assert (funnel["views"], funnel["starts"]) == (1, 1)
    assert funnel["pages"][0]["reached"] == 1


async def test_a_stamp_posted_to_several_processes_counts_one_start(
    api: Api, settings: Settings, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    page = await api.get(f"/f/{form_id}")
    [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', page.text)
    apps = [create_app(settings) for _ in range(3)]
    try:
        for app in apps:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                for _ in range(2):
                    await client.post(f"/f/{form_id}/start", data={"_stamp": stamp})
        for app in apps:
            await services_of(app).funnel.flush()
    finally:
        for app in apps:
            await release(app)

    assert (await _funnel(api, form_id, secret))["starts"] == 1


async def test_a_start_counts_within_a_day_of_its_page_and_its_stamp_is_then_forgotten(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    stamps = []
    for _ in range(2):
        page = await api.get(f"/f/{form_id}")
        stamps += re.findall(r'name="_stamp" value="([^"]+)"', page.text)
    early, late = stamps

    with shift(timedelta(hours=23)):
        await api.post(f"/f/{form_id}/start", data={"_stamp": early})
        await services_of(app).funnel.flush()
    with shift(timedelta(hours=25)):
        await api.post(f"/f/{form_id}/start", data={"_stamp": late})
        await api.post(f"/f/{form_id}/start", data={"_stamp": early})
        await services_of(app).funnel.flush()
    kept = await session.scalar(select(func.count()).select_from(StartedStamp))
    await session.commit()
    with shift(timedelta(hours=26)):
        forgotten = await funnel_service.purge_started(create_sessionmaker(services_of(app).engine))
        await api.post(f"/f/{form_id}/start", data={"_stamp": early})
        await services_of(app).funnel.flush()

    assert kept == 1
    assert forgotten == 1
    assert (await _funnel(api, form_id, secret))["starts"] == 1


def test_pages_served_in_one_millisecond_carry_stamps_of_their_own() -> None:
    box = SecretBox(["s" * 32])
    at = utcnow()

    one, other = (stamp.make(box, "frm_1", at) for _ in range(2))

    assert one != other
    assert stamp.read(box, "frm_1", one, at) == stamp.read(box, "frm_1", other, at) == at
    assert stamp.read(box, "frm_2", one, at) is None


@pytest.fixture
def limited_settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=3, secret_key=["f" * 32])


@pytest.mark.usefixtures("whole_minute")
async def test_the_beacon_is_limited_per_ip_like_the_page(
    api: Api, limited_settings: Settings, contract: Contract, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)
    app = create_app(limited_settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        api = Api(client, limited_settings, contract)
        page = await api.get(f"/f/{form_id}")
        [stamp] = re.findall(r'name="_stamp" value="([^"]+)"', page.text)
        statuses = [
            (await api.post(f"/f/{form_id}/start", data={"_stamp": stamp})).status_code
            for _ in range(3)
        ]
    await release(app)

    assert statuses == [204, 204, 429]


async def test_funnel_counts_go_with_their_form_and_their_organization(
    served: tuple[FastAPI, Api], session: AsyncSession
) -> None:
    app, api = served
    form_id, secret, org_id = await publish_over_api(api, session, FORM)
    kept_id, kept_secret, _ = await publish_over_api(api, session, FORM)
    for form in (form_id, kept_id):
        respondent = Respondent(api, form)
        await respondent.open()
        await respondent.next(0)
    await services_of(app).funnel.flush()
    # A view held when its form is deleted is dropped, and does not hold up others.
    await Respondent(api, form_id).open()
    await Respondent(api, kept_id).open()
    assert (await api.delete(f"/v1/forms/{form_id}", secret)).status_code == 204
    await services_of(app).funnel.flush()

    kept = await _funnel(api, kept_id, kept_secret)
    counted = select(FunnelCount.form_id).distinct().where(FunnelCount.organization_id == org_id)
    assert (await session.scalars(counted)).all() == []
    assert kept["views"] == 2
    await session.execute(delete(Organization))
    await session.commit()
    every = unscoped(select(FunnelCount.form_id), "every organization's, all deleted")
    assert (await session.scalars(every)).all() == []


async def test_views_held_by_several_processes_add_up_when_each_flushes(
    api: Api, settings: Settings, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    apps = [create_app(settings) for _ in range(3)]
    try:
        for loads, app in enumerate(apps, start=1):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                for _ in range(loads):
                    assert (await client.get(f"/f/{form_id}")).status_code == 200
        await services_of(apps[0]).funnel.flush()
        assert (await _funnel(api, form_id, secret))["views"] == 1  # the others' still held
        await services_of(apps[1]).funnel.flush()
        await services_of(apps[1]).funnel.flush()  # nothing held: adds nothing
    finally:
        for app in apps:
            await release(app)  # the third writes its own at shutdown

    assert (await _funnel(api, form_id, secret))["views"] == 1 + 2 + 3
