"""A deleted submission's answers leave every event: the events list, the
events table, and whatever a webhook sends from then on (a resend, a
recovery). The events stay, marked redacted, as a record of what happened.
A correction leaves the old values in the earlier events, as docs/concepts/events.md
says, until those events age out or the submission is deleted."""

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.kit.time import utcnow
from formsapi.models import Event, WebhookDelivery
from formsapi.tenancy import unscoped
from formsapi.webhook.worker import Worker
from tests.conftest import Api
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver
from tests.support.settled import events_settled

SCOPES = EVERY_SCOPE
SECRET_WORDS = ("Lovelace", "Babbage")  # in answers only, never in a title or key


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["e" * 32],
        webhook_allow_private_networks=True,
        webhook_worker="off",
        webhook_timeout=10,
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Worker]:
    found = new_worker(engine, settings, seed=3)
    yield found
    await found.close()


async def _organization(session: AsyncSession) -> dict[str, str]:
    org = await create_org(session)
    _, key = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org)
    await session.commit()
    return {"key": key, "form": form.id}


async def _endpoint(api: Api, key: str, url: str, **fields: Any) -> str:
    created = await api.post("/v1/webhook-endpoints", key, json={"url": url, **fields})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def _events(api: Api, key: str) -> list[dict[str, Any]]:
    """The organization's events since its form was made."""
    await events_settled(api.settings.database_url.get_secret_value())
    types = "submission.created,submission.updated,submission.deleted,form.deleted"
    page = await api.get("/v1/events", key, params={"limit": 1000, "types": types})
    assert page.status_code == 200, page.text
    events: list[dict[str, Any]] = page.json()["data"]
    return events


async def _stored_event_data(engine: AsyncEngine) -> list[str]:
    async with async_sessionmaker(engine)() as session:
        every = unscoped(select(Event.data), "every event the test's organizations made")
        return list((await session.scalars(every)).all())


def _payloads(received: list[Received]) -> list[dict[str, Any]]:
    return [orjson.loads(r.body) for r in received]


def _leaks(texts: list[str]) -> list[str]:
    return [text for text in texts if any(word in text for word in SECRET_WORDS)]


async def test_a_deleted_submissions_answers_leave_every_event_resend_and_recovery(
    api: Api, session: AsyncSession, engine: AsyncEngine, worker: Worker
) -> None:
    org = await _organization(session)
    async with Receiver() as receiver, Receiver() as paused:
        live = await _endpoint(api, org["key"], receiver.url)
        away = await _endpoint(api, org["key"], paused.url, enabled=False)
        since = utcnow() - timedelta(minutes=1)
        url = f"/v1/forms/{org['form']}/submissions"
        posted = await api.post(
            url, org["key"], json={"answers": {"name": "Ada Lovelace", "colors": "red"}}
        )
        submission = posted.json()
        edited = await api.patch(
            f"{url}/{submission['id']}", org["key"], json={"answers": {"name": "Ada Babbage"}}
        )
        assert edited.status_code == 200, edited.text
        await worker.drain()
        assert len(_leaks([r.body.decode() for r in receiver.received])) == 2  # as they were

        assert (await api.delete(f"{url}/{submission['id']}", org["key"])).status_code == 204
        await worker.drain()  # the delete's event, while `away` is still disabled
        events = await _events(api, org["key"])
        stored = await _stored_event_data(engine)
        deliveries = await api.get(f"/v1/webhook-endpoints/{live}/deliveries", org["key"])
        created = next(
            d for d in deliveries.json()["data"] if d["eventType"] == "submission.created"
        )
        resent = await api.post(
            f"/v1/webhook-endpoints/{live}/deliveries/{created['id']}/resend", org["key"]
        )
        assert resent.status_code == 202
        await api.patch(f"/v1/webhook-endpoints/{away}", org["key"], json={"enabled": True})
        recovered = await api.post(
            f"/v1/webhook-endpoints/{away}/recover", org["key"], json={"since": since.isoformat()}
        )
        assert recovered.json() == {"queued": 3}  # created, updated, deleted
        await worker.drain()

    kinds = [e["type"] for e in events]
    assert kinds == ["submission.created", "submission.updated", "submission.deleted"]
    for event in events[:2]:
        assert "answers" not in event["data"]
        assert event["data"]["redacted"] is True
        assert event["data"]["id"] == submission["id"]
        assert event["data"]["changeSeq"] in (submission["changeSeq"], edited.json()["changeSeq"])
    assert _leaks(stored) == []
    first, again = [p for p in _payloads(receiver.received) if p["type"] == "submission.created"]
    assert first["data"] == submission
    assert again["data"] == {
        **{k: v for k, v in submission.items() if k != "answers"},
        "updatedAt": submission["submittedAt"],
        "version": 1,
        "redacted": True,
    }
    assert _leaks([r.body.decode() for r in paused.received]) == []
    recovered_kinds = sorted(p["type"] for p in _payloads(paused.received))
    assert recovered_kinds == sorted(kinds)
    assert all(p["data"]["redacted"] for p in _payloads(paused.received) if p["type"] != kinds[2])


async def test_deleting_a_form_with_its_submissions_erases_all_their_answers_from_events(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    org = await _organization(session)
    other = await _organization(session)  # keeps its answers
    for name in ("Ada Lovelace", "Charles Babbage"):
        for owner in (org, other):
            posted = await api.post(
                f"/v1/forms/{owner['form']}/submissions",
                owner["key"],
                json={"answers": {"name": name, "colors": "blue"}},
            )
            assert posted.status_code == 201
    deleted = await api.delete(
        f"/v1/forms/{org['form']}", org["key"], params={"deleteSubmissions": "true"}
    )
    assert deleted.status_code == 204

    gone = await _events(api, org["key"])
    kept = await _events(api, other["key"])

    assert [e["type"] for e in gone] == ["submission.created"] * 2 + ["form.deleted"]
    assert all(e["data"]["redacted"] and "answers" not in e["data"] for e in gone[:2])
    assert [e["data"]["answers"]["name"] for e in kept] == ["Ada Lovelace", "Charles Babbage"]
    assert len(_leaks(await _stored_event_data(engine))) == 2  # the other organization's


async def test_a_correction_leaves_the_old_value_in_the_earlier_event(
    api: Api, session: AsyncSession
) -> None:
    org = await _organization(session)
    url = f"/v1/forms/{org['form']}/submissions"
    posted = await api.post(
        url, org["key"], json={"answers": {"name": "Ada Lovelace", "colors": "red"}}
    )
    submission_id = posted.json()["id"]
    await api.patch(f"{url}/{submission_id}", org["key"], json={"answers": {"name": "Ada King"}})

    created, updated = await _events(api, org["key"])

    assert created["data"]["answers"]["name"] == "Ada Lovelace"
    assert updated["data"]["answers"]["name"] == "Ada King"


async def test_deliveries_of_erased_events_are_kept_in_the_log(
    api: Api, session: AsyncSession, engine: AsyncEngine, worker: Worker
) -> None:
    org = await _organization(session)
    async with Receiver() as receiver:
        endpoint = await _endpoint(api, org["key"], receiver.url)
        url = f"/v1/forms/{org['form']}/submissions"
        posted = await api.post(
            url, org["key"], json={"answers": {"name": "Ada Lovelace", "colors": "red"}}
        )
        await worker.drain()
        await api.delete(f"{url}/{posted.json()['id']}", org["key"])
        await worker.drain()

    async with async_sessionmaker(engine)() as reader:
        every = unscoped(select(WebhookDelivery.event_type), "the test's one endpoint")
        logged = sorted((await reader.scalars(every)).all())
    listed = await api.get(f"/v1/webhook-endpoints/{endpoint}/deliveries", org["key"])
    assert logged == ["submission.created", "submission.deleted"]
    assert [d["status"] for d in listed.json()["data"]] == ["succeeded", "succeeded"]


async def test_a_delivery_waiting_for_its_slot_sends_what_remains_after_a_delete(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    one_at_a_time = settings.model_copy(update={"webhook_endpoint_concurrency": 1})
    release = asyncio.Event()

    async def first_hangs(request: Received) -> Answer:
        if len([r for r in received if r is not request]) == 0:
            await release.wait()
        return 200, {}, b""

    worker = new_worker(engine, one_at_a_time)
    org = await _organization(session)
    url = f"/v1/forms/{org['form']}/submissions"
    try:
        async with Receiver(first_hangs) as receiver:
            received = receiver.received
            await _endpoint(api, org["key"], receiver.url)
            submitted = {}
            for name in ("Ada Lovelace", "Charles Babbage"):
                posted = await api.post(
                    url, org["key"], json={"answers": {"name": name, "colors": "red"}}
                )
                submitted[posted.json()["id"]] = name
            await worker.dispatch()
            assert await worker.claim() == 2  # one being sent, the other waiting
            while not received:  # noqa: ASYNC110 - the receiver's log
                await asyncio.sleep(0.01)
            [waiting] = set(submitted) - {_payloads(received)[0]["data"]["id"]}
            deleted = await api.delete(f"{url}/{waiting}", org["key"])
            assert deleted.status_code == 204
            await asyncio.sleep(0.2)  # well inside a second of the delete
            release.set()
            await worker.drain()
    finally:
        await worker.close()

    first, second = _payloads(received)[:2]
    assert first["data"]["answers"]["name"] == submitted[first["data"]["id"]]
    assert second["data"]["id"] == waiting
    assert second["data"]["redacted"] is True
    assert "answers" not in second["data"]
