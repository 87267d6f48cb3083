"""Webhook delivery end to end, with a real receiver on loopback and a
worker in this process: signed, retried on schedule, disabled when the
receiver says so or fails for days, isolated per endpoint."""

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from standardwebhooks import Webhook, WebhookVerificationError

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.session import session_scope
from formsapi.kit.time import shift, utcnow
from formsapi.models import WebhookDelivery
from formsapi.tenancy import unscoped
from formsapi.webhook import delivery, repository
from formsapi.webhook.worker import Worker
from tests.conftest import Api
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver

SCOPES = EVERY_SCOPE
KEY = "k" * 40
ANSWERS = {"name": "Ada", "colors": "red"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=[KEY],
        webhook_allow_private_networks=True,
        webhook_worker="off",  # the tests drive their own
        webhook_timeout=10,  # a busy CI machine must not turn a slow answer into a retry
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> Any:
    found = new_worker(engine, settings, seed=7)
    yield found
    await found.close()


async def _setup(api: Api, session: AsyncSession, url: str, **endpoint: Any) -> dict[str, Any]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org)
    await session.commit()
    created = await api.post("/v1/webhook-endpoints", secret, json={"url": url, **endpoint})
    assert created.status_code == 201, created.text
    return {"key": secret, "form": form.id, "endpoint": created.json()}


async def _submit(api: Api, setup: dict[str, Any]) -> dict[str, Any]:
    response = await api.post(
        f"/v1/forms/{setup['form']}/submissions", setup["key"], json={"answers": ANSWERS}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def _deliveries(engine: AsyncEngine) -> list[WebhookDelivery]:
    async with async_sessionmaker(engine)() as session:
        every = unscoped(select(WebhookDelivery), "each test has one organization")
        return list((await session.scalars(every)).all())


async def test_a_submission_reaches_the_receiver_signed_with_the_event_id(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async with Receiver() as receiver:
        setup = await _setup(api, session, receiver.url, eventTypes=["submission.created"])
        submission = await _submit(api, setup)
        await worker.drain()

    [request] = receiver.received
    payload = Webhook(setup["endpoint"]["secret"]).verify(request.body, request.headers)
    assert payload["type"] == "submission.created"
    assert payload["data"] == submission
    assert payload["timestamp"] == submission["submittedAt"]
    params = {"types": "submission.created"}
    [event] = (await api.get("/v1/events", setup["key"], params=params)).json()["data"]
    assert request.headers["webhook-id"] == event["id"]
    assert request.headers["content-type"] == "application/json"


async def test_a_failing_receiver_is_retried_on_the_schedule_then_given_up(
    api: Api, session: AsyncSession, worker: Worker, engine: AsyncEngine, settings: Settings
) -> None:
    async def refuse(_: Received) -> Answer:
        return 500, {}, b"do\x00wn"  # a NUL PostgreSQL text refuses must not stop the log

    schedule = settings.webhook_retry_schedule
    async with Receiver(refuse) as receiver:
        setup = await _setup(api, session, receiver.url)
        await _submit(api, setup)
        waits: list[float] = []
        offset = timedelta()
        for _ in schedule:
            with shift(offset):
                await worker.drain()
            [found] = [d for d in await _deliveries(engine) if d.event_type == "submission.created"]
            if found.status != "pending":
                break
            waits.append((found.next_attempt_at - utcnow() - offset).total_seconds())
            offset = found.next_attempt_at - utcnow() + timedelta(seconds=1)

    assert found.status == "failed"
    assert found.attempts == len(schedule)
    assert len(receiver.received) == len(schedule)
    assert len(waits) == len(schedule) - 1
    for wait, step in zip(waits, schedule[1:], strict=True):
        assert step * 0.8 - 1 <= wait <= step * 1.2 + 1, (wait, step)
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    log = await api.get(
        f"/v1/webhook-endpoints/{setup['endpoint']['id']}/deliveries/{found.id}", setup["key"]
    )
    attempts = log.json()["attemptLog"]
    assert [a["statusCode"] for a in attempts] == [500] * len(schedule)
    assert attempts[0]["responseBody"] == "down"


async def test_a_claim_its_worker_never_sent_is_not_counted_as_an_attempt(
    api: Api, session: AsyncSession, worker: Worker, engine: AsyncEngine
) -> None:
    async with Receiver() as receiver:
        setup = await _setup(api, session, receiver.url, eventTypes=["submission.created"])
        await _submit(api, setup)
        await worker.dispatch()
        [due] = await _deliveries(engine)
        # Claimed as a worker claims, by one killed before it sent anything.
        now = utcnow()
        async with session_scope(async_sessionmaker(engine)) as killed:
            assert len(await repository.claim(killed, [due.id], now, now + worker.lease)) == 1
        await worker.drain()
        assert receiver.received == []  # leased: nobody else sends it yet
        with shift(worker.lease + timedelta(seconds=1)):
            await worker.drain()

    assert len(receiver.received) == 1
    url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}/deliveries"
    detail = (await api.get(f"{url}/{due.id}", setup["key"])).json()
    assert detail["status"] == "succeeded"
    assert len(detail["attemptLog"]) == 1
    assert detail["attempts"] == 1
    [listed] = (await api.get(url, setup["key"])).json()["data"]
    assert listed["attempts"] == 1


async def test_an_attempt_recorded_after_another_worker_took_it_over_counts_but_changes_nothing(
    api: Api,
    session: AsyncSession,
    worker: Worker,
    engine: AsyncEngine,
    settings: Settings,
) -> None:
    release = asyncio.Event()

    async def first_hangs_then_fails(_: Received) -> Answer:
        if len(receiver.received) > 1:
            return 200, {}, b"ok"
        await release.wait()
        return 500, {}, b"too late"

    stalled = new_worker(engine, settings)
    try:
        async with Receiver(first_hangs_then_fails) as receiver:
            setup = await _setup(api, session, receiver.url, eventTypes=["submission.created"])
            await _submit(api, setup)
            await stalled.dispatch()
            assert await stalled.claim() == 1
            async with asyncio.timeout(10):
                while not receiver.received:  # noqa: ASYNC110 - a receiver's log
                    await asyncio.sleep(0.01)
            # The stalled worker's lease runs out; another takes the delivery over.
            with shift(stalled.lease + timedelta(seconds=1)):
                await worker.drain()
            release.set()
            await stalled.drain()
    finally:
        await stalled.close()

    [found] = await _deliveries(engine)
    url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}/deliveries/{found.id}"
    detail = (await api.get(url, setup["key"])).json()
    assert detail["status"] == "succeeded"  # not retried for the late failure
    assert detail["lastStatusCode"] == 200
    assert sorted(a["statusCode"] for a in detail["attemptLog"]) == [200, 500]
    assert detail["attempts"] == 2


def test_retry_after_is_honoured_within_bounds_and_overload_backs_off_harder() -> None:
    schedule = [0.0, 5, 300, 1800]
    rng = random.Random(1)  # noqa: S311 - jitter
    plain = delivery.Result(delivery.Outcome.failed, 500)
    assert 4 <= delivery.next_delay(1, schedule, plain, rng) <= 6  # type: ignore[operator]
    busy = delivery.Result(delivery.Outcome.failed, 429, overloaded=True)
    assert 48 <= delivery.next_delay(1, schedule, busy, rng) <= 72  # type: ignore[operator]
    asked = delivery.Result(delivery.Outcome.failed, 503, retry_after=30)
    assert delivery.next_delay(1, schedule, asked, rng) == 10  # at most twice the step
    assert delivery.next_delay(2, schedule, asked, rng) == 300  # never sooner than the step
    within = delivery.Result(delivery.Outcome.failed, 503, retry_after=450)
    assert delivery.next_delay(2, schedule, within, rng) == 450
    assert delivery.next_delay(4, schedule, plain, rng) is None


async def test_410_disables_the_endpoint_and_records_why(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async def gone(_: Received) -> Answer:
        return 410, {}, b""

    async with Receiver(gone) as receiver:
        setup = await _setup(api, session, receiver.url)
        await _submit(api, setup)
        await worker.drain()
        await _submit(api, setup)
        await worker.drain()

    assert len(receiver.received) == 1
    endpoint = (
        await api.get(f"/v1/webhook-endpoints/{setup['endpoint']['id']}", setup["key"])
    ).json()
    assert endpoint["enabled"] is False
    assert "410" in endpoint["disabledReason"]
    params = {"types": "webhook_endpoint.disabled"}
    [disabled] = (await api.get("/v1/events", setup["key"], params=params)).json()["data"]
    assert disabled["data"] == {k: v for k, v in endpoint.items() if k != "url"}


async def test_an_endpoint_failing_everything_for_five_days_is_disabled(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async def refuse(_: Received) -> Answer:
        return 503, {}, b""

    async with Receiver(refuse) as receiver:
        setup = await _setup(api, session, receiver.url)
        await _submit(api, setup)
        await worker.drain()
        for day in (2, 4):
            with shift(timedelta(days=day)):
                await _submit(api, setup)
                await worker.drain()
        url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}"
        assert (await api.get(url, setup["key"])).json()["enabled"] is True
        with shift(timedelta(days=5, hours=1)):
            await _submit(api, setup)
            await worker.drain()
        endpoint = (await api.get(url, setup["key"])).json()

    assert endpoint["enabled"] is False
    assert "5 days" in endpoint["disabledReason"]


async def test_a_success_resets_the_five_day_clock(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    healthy = {"now": False}

    async def flaky(_: Received) -> Answer:
        return (200 if healthy["now"] else 500), {}, b""

    async with Receiver(flaky) as receiver:
        setup = await _setup(api, session, receiver.url)
        await _submit(api, setup)
        await worker.drain()
        with shift(timedelta(days=3)):
            healthy["now"] = True
            await _submit(api, setup)
            await worker.drain()
            healthy["now"] = False
        with shift(timedelta(days=6)):
            await _submit(api, setup)
            await worker.drain()
        url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}"
        endpoint = (await api.get(url, setup["key"])).json()

    assert endpoint["enabled"] is True
    assert len(receiver.received) >= 3


async def test_a_rotated_secret_signs_beside_the_new_one_for_a_day(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async with Receiver() as receiver:
        setup = await _setup(api, session, receiver.url)
        first = setup["endpoint"]["secret"]
        url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}"
        with shift(-timedelta(hours=25)):  # rotated yesterday: the overlap is over
            second = (await api.post(f"{url}/rotate-secret", setup["key"])).json()["secret"]
        await _submit(api, setup)
        await worker.drain()
        third = (await api.post(f"{url}/rotate-secret", setup["key"])).json()["secret"]
        await _submit(api, setup)
        await worker.drain()

    after, during = receiver.received
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    Webhook(second).verify(after.body, after.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(first).verify(after.body, after.headers)
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    for secret in (second, third):
        Webhook(secret).verify(during.body, during.headers)


async def test_a_name_resolving_to_loopback_is_refused_at_creation_and_at_send_time(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    guarded = settings.model_copy(update={"webhook_allow_private_networks": False})
    async with Receiver() as receiver:
        named = receiver.url.replace("127.0.0.1", "localhost")
        setup = await _setup(api, session, named)
        strict = new_worker(engine, guarded)
        try:
            await _submit(api, setup)
            await strict.drain()
        finally:
            await strict.close()
        assert receiver.received == []
        [found] = await _deliveries(engine)
        assert found.status == "pending"
        assert "refused" in (found.last_error or "")

    refused = await _guarded_create(guarded, setup["key"], named)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["pointer"] == "/url"


async def _guarded_create(settings: Settings, key: str, url: str) -> httpx.Response:
    """POST an endpoint to an app with these settings."""
    app = create_app(settings)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as client:
            headers = {"Authorization": f"Bearer {key}"}
            return await client.post("/v1/webhook-endpoints", json={"url": url}, headers=headers)
    finally:
        await release(app)


async def test_a_slow_receiver_does_not_hold_up_another_endpoint(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    release = asyncio.Event()

    async def stuck(_: Received) -> Answer:
        await release.wait()
        return 200, {}, b""

    narrow = settings.model_copy(
        update={"webhook_concurrency": 6, "webhook_endpoint_concurrency": 2, "webhook_timeout": 10}
    )
    worker = new_worker(engine, narrow)
    async with Receiver(stuck) as slow, Receiver() as fast:
        setup = await _setup(api, session, slow.url)
        second = await api.post("/v1/webhook-endpoints", setup["key"], json={"url": fast.url})
        assert second.status_code == 201
        for _ in range(10):
            await _submit(api, setup)
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop, grace=1))
        try:
            async with asyncio.timeout(10):
                while len(fast.received) < 10:  # noqa: ASYNC110 - a receiver's log
                    await asyncio.sleep(0.02)
            assert len(slow.received) == 2  # its cap, however much it has waiting
        finally:
            release.set()
            stop.set()
            await running


async def test_a_test_event_resend_and_recovery_reach_the_receiver(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    down = {"now": True}

    async def flaky(_: Received) -> Answer:
        return (500 if down["now"] else 200), {}, b""

    async with Receiver(flaky) as receiver:
        setup = await _setup(api, session, receiver.url)
        url = f"/v1/webhook-endpoints/{setup['endpoint']['id']}"
        since = datetime.now(UTC) - timedelta(minutes=1)
        await api.patch(url, setup["key"], json={"enabled": False})
        missed = await _submit(api, setup)  # while disabled: never sent
        await worker.drain()
        await api.patch(url, setup["key"], json={"enabled": True})
        failing = await _submit(api, setup)
        await worker.drain()  # fails, retried later
        down["now"] = False
        recovered = await api.post(
            f"{url}/recover", setup["key"], json={"since": since.isoformat()}
        )
        assert recovered.status_code == 202, recovered.text
        await worker.drain()
        ping = await api.post(f"{url}/test", setup["key"])
        assert ping.status_code == 202
        await worker.drain()
        resent = await api.post(
            f"{url}/deliveries/{ping.json()['deliveryId']}/resend", setup["key"]
        )
        assert resent.status_code == 202
        await worker.drain()

    seen = [orjson.loads(r.body) for r in receiver.received if r.headers]
    ids = {d["data"].get("id") for d in seen if d["type"] == "submission.created"}
    assert {missed["id"], failing["id"]} <= ids
    pings = [r.headers["webhook-id"] for r in receiver.received if b'"ping"' in r.body]
    assert pings == [ping.json()["eventId"]] * 2


async def test_recovering_sends_only_what_the_endpoint_wanted_while_it_existed(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async with Receiver() as receiver:
        org = await create_org(session)
        _, key = await create_key(session, org, scopes=SCOPES)
        form = await create_form(session, org)
        await session.commit()
        since = datetime.now(UTC) - timedelta(minutes=1)
        setup = {"key": key, "form": form.id}
        before = await _submit(api, setup)  # before the endpoint existed
        created = await api.post(
            "/v1/webhook-endpoints", key, json={"url": receiver.url, "eventTypes": ["form.updated"]}
        )
        url = f"/v1/webhook-endpoints/{created.json()['id']}"
        unwanted = await _submit(api, setup)  # not a type it wanted then
        await api.patch(url, key, json={"enabled": False})
        renamed = await api.patch(f"/v1/forms/{form.id}", key, json={"title": "Renamed"})
        assert renamed.status_code == 200
        await api.patch(url, key, json={"eventTypes": []})  # from now on, everything
        missed = await _submit(api, setup)
        await worker.drain()
        assert receiver.received == []  # disabled all along
        await api.patch(url, key, json={"enabled": True})
        recovered = await api.post(f"{url}/recover", key, json={"since": since.isoformat()})
        await worker.drain()

    assert recovered.json() == {"queued": 2}
    sent = [orjson.loads(r.body) for r in receiver.received]
    assert sorted((p["type"], p["data"]["id"]) for p in sent) == sorted(
        [("form.updated", form.id), ("submission.created", missed["id"])]
    )
    assert {before["id"], unwanted["id"]}.isdisjoint(p["data"]["id"] for p in sent)


async def test_an_event_waiting_to_be_fanned_out_goes_where_it_was_wanted_when_it_happened(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    async with Receiver() as receiver:
        org = await create_org(session)
        _, key = await create_key(session, org, scopes=SCOPES)
        form = await create_form(session, org)
        await session.commit()
        created = await api.post(
            "/v1/webhook-endpoints", key, json={"url": receiver.url, "eventTypes": ["form.updated"]}
        )
        url = f"/v1/webhook-endpoints/{created.json()['id']}"
        before = await _submit(api, {"key": key, "form": form.id})  # not wanted then
        await api.patch(url, key, json={"eventTypes": []})  # before any worker ran
        after = await _submit(api, {"key": key, "form": form.id})
        since = datetime.now(UTC) - timedelta(minutes=1)
        recovered = await api.post(f"{url}/recover", key, json={"since": since.isoformat()})
        await worker.drain()

    assert recovered.json() == {"queued": 0}  # what waits to be fanned out is on its way
    sent = [orjson.loads(r.body)["data"]["id"] for r in receiver.received]
    assert sent == [after["id"]]
    assert before["id"] not in sent


async def test_resending_takes_the_scope_that_reads_what_the_delivery_carries(
    api: Api, session: AsyncSession, worker: Worker
) -> None:
    org = await create_org(session)
    _, key = await create_key(session, org, scopes=SCOPES)
    _, forms_only = await create_key(session, org, scopes=["forms:read", "webhooks:manage"])
    form = await create_form(session, org)
    await session.commit()
    async with Receiver() as receiver:
        created = await api.post("/v1/webhook-endpoints", key, json={"url": receiver.url})
        url = f"/v1/webhook-endpoints/{created.json()['id']}"
        await _submit(api, {"key": key, "form": form.id})
        ping = (await api.post(f"{url}/test", key)).json()
        await worker.drain()
        [submitted] = [
            d["id"]
            for d in (await api.get(f"{url}/deliveries", key)).json()["data"]
            if d["eventType"] == "submission.created"
        ]
        refused = await api.post(f"{url}/deliveries/{submitted}/resend", forms_only)
        allowed = await api.post(f"{url}/deliveries/{ping['deliveryId']}/resend", forms_only)

    assert refused.status_code == 403
    assert refused.json()["requiredScope"] == "submissions:read"
    assert allowed.status_code == 202
