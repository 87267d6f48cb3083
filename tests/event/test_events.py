"""The events list: one event per change, written with it, in commit order,
with the resource as the API returned it."""

from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.event import service as event_service
from formsapi.event.retention import purge_events
from formsapi.kit.time import shift, utcnow
from formsapi.models import EventType
from tests.conftest import Api
from tests.support.factories import BLOCKS, create_form, create_key, create_org
from tests.support.settled import events_settled

EVERYTHING = [
    "forms:read",
    "forms:write",
    "submissions:read",
    "submissions:write",
    "events:read",
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


async def _org(session: AsyncSession, scopes: list[str] = EVERYTHING) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=scopes)
    await session.commit()
    return org.id, secret


async def _events(api: Api, secret: str, *, settle: bool = True, **params: Any) -> dict[str, Any]:
    if settle:
        await events_settled(api.settings.database_url.get_secret_value())
    response = await api.get("/v1/events", secret, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _all_events(api: Api, secret: str, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        page = await _events(api, secret, **params)
        found += page["data"]
        params["after"] = page["next"]
        if not page["hasMore"]:
            return found


async def test_every_change_has_one_event_carrying_the_resource_as_the_api_returned_it(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _org(session)
    created = (
        await api.post("/v1/forms", secret, json={"title": "Survey", "blocks": BLOCKS})
    ).json()
    form_id = created["id"]
    published = (
        await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    ).json()
    url = f"/v1/forms/{form_id}/submissions"
    submitted = await api.post(url, secret, json={"answers": {"name": "Ada", "colors": "red"}})
    submission = submitted.json()
    edited = (
        await api.patch(f"{url}/{submission['id']}", secret, json={"answers": {"name": "Bo"}})
    ).json()
    before_delete = await _all_events(api, secret)
    assert (await api.delete(f"{url}/{submission['id']}", secret)).status_code == 204
    renamed = (await api.patch(f"/v1/forms/{form_id}", secret, json={"title": "Poll"})).json()
    assert (await api.delete(f"/v1/forms/{form_id}", secret)).status_code == 204

    events = await _all_events(api, secret)

    assert [e["type"] for e in events] == [
        "form.created",
        "form.status_changed",
        "submission.created",
        "submission.updated",
        "submission.deleted",
        "form.updated",
        "form.deleted",
    ]
    assert len({e["id"] for e in events}) == len(events)
    assert events[0]["data"] == created
    assert events[1]["data"] == {**published, "from": "draft", "to": "published"}
    assert before_delete[2]["data"] == submission
    assert before_delete[3]["data"] == edited
    assert before_delete[3]["data"]["version"] == 2
    # Deleted since: its events keep what happened, not the answers.
    assert events[2]["data"] == {**_without_answers(submission), "redacted": True}
    assert events[3]["data"] == {**_without_answers(edited), "redacted": True}
    deleted = events[4]["data"]
    assert deleted["id"] == submission["id"]
    assert deleted["deleted"] is True
    assert deleted["changeSeq"] == edited["changeSeq"] + 1
    assert events[5]["data"] == renamed
    assert events[6]["data"]["id"] == form_id
    assert events[6]["data"]["deleted"] is True
    assert events[2]["timestamp"] == submission["submittedAt"]


def _without_answers(submission: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in submission.items() if key != "answers"}


async def test_a_change_that_fails_leaves_no_event(api: Api, session: AsyncSession) -> None:
    org_id, secret = await _org(session)
    org = await session.get(type(await create_org(session)), org_id)
    assert org is not None
    form = await create_form(session, org)
    await session.commit()
    before = await _all_events(api, secret)
    url = f"/v1/forms/{form.id}/submissions"

    invalid = await api.post(url, secret, json={"answers": {"colors": "green"}})
    missing = await api.delete(f"{url}/sub_missing", secret)
    taken = await api.patch(f"/v1/forms/{form.id}", secret, json={"status": "draft"})

    assert (invalid.status_code, missing.status_code, taken.status_code) == (422, 404, 409)
    assert await _all_events(api, secret) == before


async def test_pages_follow_on_from_next_and_filters_narrow_them(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _org(session)
    forms = []
    for title in ("A", "B"):
        response = await api.post("/v1/forms", secret, json={"title": title, "blocks": BLOCKS})
        forms.append(response.json()["id"])
        await api.patch(f"/v1/forms/{forms[-1]}", secret, json={"status": "published"})
    for form_id in forms * 3:
        await api.post(
            f"/v1/forms/{form_id}/submissions",
            secret,
            json={"answers": {"name": "Ada", "colors": "red"}},
        )
    everything = await _all_events(api, secret)
    assert len(everything) == 2 * 2 + 6

    assert await _all_events(api, secret, limit=3) == everything
    first = await _events(api, secret, limit=4)
    assert first["hasMore"] is True
    rest = await _events(api, secret, after=first["next"])
    assert first["data"] + rest["data"] == everything
    assert rest["hasMore"] is False
    assert (await _events(api, secret, after=rest["next"]))["data"] == []

    created = await _all_events(api, secret, types="submission.created", formId=forms[1])
    assert [e["data"]["formId"] for e in created] == [forms[1]] * 3
    both = await _all_events(api, secret, types=["form.created", "form.status_changed"])
    assert [e["type"] for e in both] == ["form.created", "form.status_changed"] * 2


async def test_other_organizations_events_are_invisible_and_unknown_cursors_expire(
    api: Api, session: AsyncSession
) -> None:
    _, ours = await _org(session)
    _, theirs = await _org(session)
    await api.post("/v1/forms", theirs, json={"title": "Theirs", "blocks": BLOCKS})
    [their_event] = (await _events(api, theirs))["data"]

    assert (await _events(api, ours))["data"] == []
    for after in (their_event["id"], "evt_01jd2xa1b2c3d4e5f6g7h8j9k0", "nonsense"):
        response = await api.get("/v1/events", ours, params={"after": after})
        assert response.status_code == 410, after
        assert response.json()["type"] == "/problems/event-cursor-expired"
    unknown = await api.get("/v1/events", ours, params={"types": "submission.made"})
    assert unknown.status_code == 400
    assert "submission.created" in unknown.json()["detail"]


async def test_reading_events_needs_the_events_scope(api: Api, session: AsyncSession) -> None:
    _, secret = await _org(session, scopes=["forms:read", "submissions:read"])
    response = await api.get("/v1/events", secret)
    assert response.status_code == 403


async def test_an_events_data_shows_only_to_a_key_that_reads_its_resource(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, everything = await create_key(session, org, scopes=[*EVERYTHING, "webhooks:manage"])
    _, events_only = await create_key(session, org, scopes=["events:read"])
    _, with_forms = await create_key(session, org, scopes=["events:read", "forms:read"])
    await session.commit()
    form = (await api.post("/v1/forms", everything, json={"title": "T", "blocks": BLOCKS})).json()
    await api.patch(f"/v1/forms/{form['id']}", everything, json={"status": "published"})
    answers = {"name": "Ada", "colors": "red"}
    url = f"/v1/forms/{form['id']}/submissions"
    assert (await api.post(url, everything, json={"answers": answers})).status_code == 201

    full = await _all_events(api, everything)
    bare = await _all_events(api, events_only)
    partial = await _all_events(api, with_forms)

    assert [e["type"] for e in full] == [
        "form.created",
        "form.status_changed",
        "submission.created",
    ]
    assert all(e["data"] is not None and "requiredScope" not in e for e in full)
    for shown, seen in ((bare, full), (partial, full)):
        assert [(e["id"], e["type"], e["timestamp"]) for e in shown] == [
            (e["id"], e["type"], e["timestamp"]) for e in seen
        ]
    assert [(e["data"], e["requiredScope"]) for e in bare] == [
        (None, "forms:read"),
        (None, "forms:read"),
        (None, "submissions:read"),
    ]
    assert [e["data"] for e in partial[:2]] == [e["data"] for e in full[:2]]
    assert (partial[2]["data"], partial[2]["requiredScope"]) == (None, "submissions:read")


async def test_a_large_submission_is_sent_thin(api: Api, session: AsyncSession) -> None:
    _, secret = await _org(session)
    blocks = [{"type": "long_text", "key": "essay", "title": "Essay", "maxLength": 60_000}]
    form = (await api.post("/v1/forms", secret, json={"title": "T", "blocks": blocks})).json()
    await api.patch(f"/v1/forms/{form['id']}", secret, json={"status": "published"})
    url = f"/v1/forms/{form['id']}/submissions"
    submission = (await api.post(url, secret, json={"answers": {"essay": "x" * 30_000}})).json()

    [event] = await _all_events(api, secret, types="submission.created")

    assert event["data"] == {
        "id": submission["id"],
        "formId": form["id"],
        "version": 1,
        "changeSeq": submission["changeSeq"],
        "url": f"{url}/{submission['id']}",
        "thin": True,
    }


async def test_events_past_their_days_are_purged_and_a_cursor_among_them_expires(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    _, secret = await _org(session)
    with shift(-timedelta(days=31)):
        await api.post("/v1/forms", secret, json={"title": "Old", "blocks": BLOCKS})
    await api.post("/v1/forms", secret, json={"title": "New", "blocks": BLOCKS})
    old, new = (await _events(api, secret))["data"]

    assert await purge_events(async_sessionmaker(engine), days=30) == 1

    assert [e["id"] for e in (await _events(api, secret))["data"]] == [new["id"]]
    expired = await api.get("/v1/events", secret, params={"after": old["id"]})
    assert expired.status_code == 410


async def test_an_event_committed_after_one_still_in_flight_waits_for_it(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    """The order clients read is the order no later commit can go back on:
    on PostgreSQL an event is listed only once every transaction that began
    writing before it has finished."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's writers take turns: a second one waits for the first")
    org_id, secret = await _org(session)
    async with async_sessionmaker(engine)() as slow:
        await event_service.record(slow, org_id, EventType.ping, utcnow(), {"id": "first"})
        await slow.flush()
        await api.post("/v1/forms", secret, json={"title": "Second", "blocks": BLOCKS})

        assert (await _events(api, secret, settle=False))["data"] == []
        await slow.commit()

    events = (await _events(api, secret))["data"]
    assert [e["type"] for e in events] == ["ping", "form.created"]


async def test_a_long_transaction_in_another_database_holds_no_event_back(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    """A bulk load or a report in another database of the same PostgreSQL
    server writes nothing of ours: our events are listed all the same."""
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's transactions only")
    _, secret = await _org(session)
    server = api.settings.database_url.get_secret_value().rsplit("/", 1)[0]
    other = await asyncpg.connect(f"{server}/postgres")
    try:
        async with other.transaction():
            await other.fetchval("SELECT pg_current_xact_id()")  # it now holds an xid
            await api.post("/v1/forms", secret, json={"title": "Meanwhile", "blocks": BLOCKS})

            events = (await _events(api, secret, settle=False))["data"]
            assert [e["type"] for e in events] == ["form.created"]
    finally:
        await other.close()


async def test_a_commit_of_events_calls_back_and_a_rollback_or_a_commit_without_does_not(
    session: AsyncSession,
) -> None:
    """What wakes a webhook worker beside the API at once (webhook/worker.py)."""
    calls: list[str] = []
    stop = event_service.when_committed(lambda: calls.append("committed"))
    try:
        org_id = (await create_org(session)).id
        await session.commit()
        assert calls == []  # no event written

        await event_service.record(session, org_id, EventType.ping, utcnow(), {"id": "p1"})
        await session.rollback()
        await session.commit()
        assert calls == []  # the events went with the rollback

        await event_service.record(session, org_id, EventType.ping, utcnow(), {"id": "p2"})
        await session.commit()
        assert calls == ["committed"]
    finally:
        stop()
    await event_service.record(session, org_id, EventType.ping, utcnow(), {"id": "p3"})
    await session.commit()
    assert calls == ["committed"]  # stopped
