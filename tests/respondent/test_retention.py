"""A form's retention: submissions older than its `retentionDays` are
deleted by the sweep, each exactly as a DELETE does, and leave nothing
behind: not in the submissions, the counts, the summary, the stored events,
what a webhook resends, nor the file storage; the feed has a tombstone for
each and the events a submission.deleted."""

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.file import service as file_service
from formsapi.file.storage import Storages
from formsapi.kit.time import shift
from formsapi.models import AnswerCount, Event, File, FileChunk
from formsapi.submission.retention import delete_expired
from formsapi.tenancy import unscoped
from formsapi.webhook.worker import Worker
from tests.conftest import Api
from tests.support.factories import new_worker, publish_over_api
from tests.support.receiver import Receiver
from tests.support.settled import events_settled

PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40
SECRET = "Lovelace"  # in old answers only

FORM: dict[str, Any] = {
    "title": "Apply",
    "retentionDays": 30,
    # Counted per value like a choice: a person's own text, here.
    "variables": [{"name": "greeting", "type": "text", "value": {"cat": ["Hi ", {"var": "name"}]}}],
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "email", "key": "email", "title": "Your email"},
        {
            "type": "single_choice",
            "key": "plan",
            "title": "Plan",
            "options": [{"value": "free", "label": "Free"}, {"value": "team", "label": "Team"}],
        },
        {
            "type": "file",
            "key": "cv",
            "title": "Your CV",
            "accept": ["application/pdf"],
            "maxSize": 1024 * 1024,
        },
    ],
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        secret_key=["r" * 40],
        webhook_allow_private_networks=True,
        webhook_worker="off",
        webhook_timeout=10,
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Worker]:
    found = new_worker(engine, settings, seed=5)
    yield found
    await found.close()


async def _files(engine: AsyncEngine) -> tuple[int, int]:
    async with create_write_sessionmaker(engine)() as session:
        files = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
        chunks = await session.scalar(select(func.count()).select_from(FileChunk))
    return int(files or 0), int(chunks or 0)


async def _stored_events(engine: AsyncEngine) -> list[str]:
    async with create_write_sessionmaker(engine)() as session:
        every = unscoped(select(Event.data), "every event the test's organization made")
        return list((await session.scalars(every)).all())


async def _counted_values(engine: AsyncEngine) -> list[str]:
    async with create_write_sessionmaker(engine)() as session:
        every = unscoped(select(AnswerCount.value), "every answer count of the test")
        return list((await session.scalars(every)).all())


async def _post(api: Api, secret: str, form_id: str, answers: dict[str, Any]) -> dict[str, Any]:
    posted = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})
    assert posted.status_code == 201, posted.text
    body: dict[str, Any] = posted.json()
    return body


async def test_a_forms_retention_is_set_shown_and_bounded(api: Api, session: AsyncSession) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/v1/forms/{form_id}"
    assert (await api.get(url, secret)).json()["retentionDays"] == 30

    changed = await api.patch(url, secret, json={"retentionDays": 3650})
    assert changed.status_code == 200
    assert changed.json()["retentionDays"] == 3650
    assert changed.json()["version"] == 1  # a setting, not a version of the form
    forever = await api.patch(url, secret, json={"retentionDays": None})
    assert forever.json()["retentionDays"] is None
    untouched = await api.patch(url, secret, json={"title": "Apply now"})
    assert untouched.json()["retentionDays"] is None
    for wrong in (0, 3651, -1, "ten", 1.5):
        refused = await api.patch(url, secret, json={"retentionDays": wrong})
        assert refused.status_code == 422, wrong
        assert refused.json()["errors"][0]["pointer"] == "/retentionDays"
    await events_settled(api.settings.database_url.get_secret_value())
    events = (
        await api.get("/v1/events", secret, params={"types": "form.created,form.updated"})
    ).json()
    assert [e["data"]["retentionDays"] for e in events["data"]] == [30, 3650, None, None]


async def test_expired_submissions_are_deleted_as_a_delete_does_and_leave_nothing_behind(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings, worker: Worker
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/v1/forms/{form_id}/submissions"
    sessionmaker = create_write_sessionmaker(engine)
    storages = Storages(settings, sessionmaker, sessionmaker)  # type: ignore[arg-type]
    async with Receiver() as receiver:
        made = await api.post("/v1/webhook-endpoints", secret, json={"url": receiver.url})
        endpoint = made.json()["id"]
        old_cv = await api.post(
            f"/v1/forms/{form_id}/files",
            secret,
            params={"question": "cv", "name": "cv.pdf"},
            content=PDF,
        )
        old = await _post(
            api,
            secret,
            form_id,
            {
                "name": f"Ada {SECRET}",
                "email": "ada@example.com",
                "plan": "team",
                "cv": old_cv.json()["id"],
            },
        )
        with shift(timedelta(days=20)):
            new_cv = await api.post(
                f"/v1/forms/{form_id}/files",
                secret,
                params={"question": "cv", "name": "b.pdf"},
                content=PDF,
            )
            new = await _post(
                api, secret, form_id, {"name": "Bo", "plan": "free", "cv": new_cv.json()["id"]}
            )
        await worker.drain()
        assert len([r for r in receiver.received if SECRET.encode() in r.body]) == 1
        assert await _files(engine) == (2, 2)

        with shift(timedelta(days=29, hours=23)):
            assert await delete_expired(sessionmaker) == 0  # not yet 30 days old
        with shift(timedelta(days=30, minutes=1)):
            assert await delete_expired(sessionmaker) == 1
            assert await delete_expired(sessionmaker) == 0  # nothing left to do
            await file_service.purge(sessionmaker, storages)
        await worker.drain()
        deliveries = (await api.get(f"/v1/webhook-endpoints/{endpoint}/deliveries", secret)).json()
        # The delivery that sent the old submission's answers, sent again.
        first = next(r for r in receiver.received if SECRET.encode() in r.body)
        event_id = first.headers["webhook-id"]
        created = next(d for d in deliveries["data"] if d["eventId"] == event_id)
        resent = await api.post(
            f"/v1/webhook-endpoints/{endpoint}/deliveries/{created['id']}/resend", secret
        )
        assert resent.status_code == 202
        await worker.drain()

    listed = (await api.get(url, secret)).json()
    assert [s["id"] for s in listed["data"]] == [new["id"]]
    assert listed["pagination"]["total"] == 1
    assert (await api.get(f"{url}/{old['id']}", secret)).status_code == 404
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1
    summary = (await api.get(f"/v1/forms/{form_id}/summary", secret)).json()
    assert summary["submissions"] == 1
    plan = next(q for q in summary["questions"] if q["key"] == "plan")
    assert {o["value"]: o["count"] for o in plan["options"]} == {"free": 1, "team": 0}
    email = next(q for q in summary["questions"] if q["key"] == "email")
    assert email["answered"] == 0

    feed = (await api.get(f"{url}/changes", secret, params={"after": 0})).json()["data"]
    tombstone = next(c for c in feed if c["id"] == old["id"])
    assert tombstone["deleted"] is True
    assert "answers" not in tombstone
    assert tombstone["changeSeq"] > new["changeSeq"]

    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret, params={"limit": 1000})).json()["data"]
    about_old = [(e["type"], e["data"]) for e in events if e["data"].get("id") == old["id"]]
    assert [kind for kind, _ in about_old] == ["submission.created", "submission.deleted"]
    assert about_old[0][1]["redacted"] is True
    assert "answers" not in about_old[0][1]
    assert about_old[1][1]["changeSeq"] == tombstone["changeSeq"]
    assert [d for d in await _stored_events(engine) if SECRET in d] == []
    assert [v for v in await _counted_values(engine) if SECRET in v] == []
    greeting = next(v for v in summary["variables"] if v["name"] == "greeting")
    assert [d["value"] for d in greeting["distribution"]] == ["Hi Bo"]
    resent_body = orjson.loads(receiver.received[-1].body)
    assert resent_body["data"]["id"] == old["id"]
    assert resent_body["data"]["redacted"] is True
    assert SECRET.encode() not in receiver.received[-1].body

    assert await _files(engine) == (1, 1)  # the kept submission's
    assert (await api.get(f"/v1/files/{old_cv.json()['id']}", secret)).status_code == 404
    assert (await api.get(f"/v1/files/{new_cv.json()['id']}", secret)).status_code == 200


async def test_a_backlog_goes_in_short_batches_each_delete_numbered_once(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    kept_id, kept_secret, _ = await publish_over_api(api, session, {**FORM, "retentionDays": None})
    url = f"/v1/forms/{form_id}/submissions"
    posted = [await _post(api, secret, form_id, {"name": f"N{n}"}) for n in range(5)]
    forever = await _post(api, kept_secret, kept_id, {"name": "Kept"})
    sessionmaker = create_write_sessionmaker(engine)

    with shift(timedelta(days=31)):
        assert await delete_expired(sessionmaker, batch=2) == 5

    assert (await api.get(url, secret)).json()["data"] == []
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    feed = (await api.get(f"{url}/changes", secret, params={"after": 0})).json()["data"]
    assert sorted(c["id"] for c in feed) == sorted(p["id"] for p in posted)
    numbers = [c["changeSeq"] for c in feed]
    assert numbers == list(range(6, 11))  # after the five posts, one each, in order
    assert all(c["deleted"] for c in feed)
    others = (await api.get(f"/v1/forms/{kept_id}/submissions", kept_secret)).json()["data"]
    assert [s["id"] for s in others] == [forever["id"]]


async def test_the_sweep_and_new_posts_to_the_same_form_stay_exact(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/v1/forms/{form_id}/submissions"
    old = [await _post(api, secret, form_id, {"name": f"Old {n}"}) for n in range(12)]
    sessionmaker = create_write_sessionmaker(engine)

    with shift(timedelta(days=31)):
        swept, *posted = await asyncio.gather(
            delete_expired(sessionmaker, batch=3),
            *(_post(api, secret, form_id, {"name": f"New {n}"}) for n in range(12)),
        )

    assert swept == 12
    listed = (await api.get(url, secret, params={"limit": 100})).json()
    assert sorted(s["id"] for s in listed["data"]) == sorted(p["id"] for p in posted)
    assert listed["pagination"]["total"] == 12
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 12
    feed = (await api.get(f"{url}/changes", secret, params={"after": 0})).json()["data"]
    numbers = sorted(c["changeSeq"] for c in feed)
    assert numbers == sorted(set(numbers))  # one number each
    assert len([c for c in feed if c.get("deleted")]) == len(old)
    summary = (await api.get(f"/v1/forms/{form_id}/summary", secret)).json()
    assert summary["submissions"] == 12
