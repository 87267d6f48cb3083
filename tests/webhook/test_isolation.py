"""One organization's receivers and names, however slow, failing or hanging,
never hold up another organization's deliveries or requests: with one
worker and with two, on both engines.

The hanging parts wait on an event the test sets only at the end, so each
test asserts an order (the quiet organization is served while the other's
requests or lookups still hang), not a time."""

import asyncio
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.db.session import session_scope
from formsapi.kit import egress
from formsapi.kit.time import shift, utcnow
from formsapi.webhook import repository
from formsapi.webhook.service import MAX_ENDPOINTS
from formsapi.webhook.worker import FAN_OUT_ROWS, _delivery_row
from tests.conftest import Api
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver

SCOPES = EVERY_SCOPE
ANSWERS = {"name": "Ada", "colors": "red"}
SHARE = 4  # deliveries one organization may have in flight per worker
# Nothing here waits for a timeout: what hangs is released by the test.
LONG = 60.0
# How long the quiet organization may take before the test fails: far more
# than it needs, far less than anything hanging would take to let go.
WITHIN = 10.0


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["i" * 32],
        webhook_allow_private_networks=True,  # receivers on loopback
        webhook_worker="off",  # the tests run their own
        webhook_timeout=LONG,
        webhook_dns_timeout=LONG,
        webhook_concurrency=16,
        webhook_organization_concurrency=SHARE,
        webhook_endpoint_concurrency=2,
        database_pool_size=3,
        database_pool_timeout=3,
    )


async def _organization(api: Api, session: AsyncSession) -> dict[str, str]:
    org = await create_org(session)
    _, key = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org)
    await session.commit()
    return {"key": key, "form": form.id}


async def _endpoint(api: Api, org: dict[str, str], url: str) -> None:
    created = await api.post("/v1/webhook-endpoints", org["key"], json={"url": url})
    assert created.status_code == 201, created.text


async def _submit(api: Api, org: dict[str, str]) -> str:
    posted = await api.post(
        f"/v1/forms/{org['form']}/submissions", org["key"], json={"answers": ANSWERS}
    )
    assert posted.status_code == 201, posted.text
    return str(posted.json()["id"])


async def _until(condition: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(WITHIN):
            while not condition():  # noqa: ASYNC110 - a receiver's log, a counter
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"not within {WITHIN:g} s: {what}") from None


@asynccontextmanager
async def _workers(engine: AsyncEngine, settings: Settings, count: int) -> AsyncIterator[None]:
    """`count` workers delivering, as separate processes would: each with its
    own slots, sharing the database."""
    stop = asyncio.Event()
    workers = [new_worker(engine, settings, seed=index) for index in range(count)]
    running = [asyncio.create_task(worker.run(stop, grace=0)) for worker in workers]
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(*running)


def _carries(received: list[Received], submission_id: str) -> bool:
    return any(orjson.loads(r.body).get("data", {}).get("id") == submission_id for r in received)


@pytest.mark.parametrize("workers", [1, 2])
async def test_hanging_receivers_of_one_organization_hold_up_no_other_organization(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings, workers: int
) -> None:
    release = asyncio.Event()

    async def hang(_: Received) -> Answer:
        await release.wait()
        return 200, {}, b""

    async with Receiver(hang) as stuck, Receiver() as quiet:
        noisy = await _organization(api, session)
        for index in range(MAX_ENDPOINTS):
            await _endpoint(api, noisy, f"{stuck.url}/{index}")
        calm = await _organization(api, session)
        await _endpoint(api, calm, quiet.url)
        for _ in range(20):  # 1,000 deliveries, each to a receiver that hangs
            await _submit(api, noisy)
        try:
            async with _workers(engine, settings, workers):
                await _until(
                    lambda: len(stuck.received) >= SHARE * workers,
                    "the noisy organization's share of every worker hanging",
                )
                submission_id = await _submit(api, calm)
                await _until(
                    lambda: _carries(quiet.received, submission_id),
                    "the quiet organization's delivery",
                )
                # However much it has waiting, it never held more than its share.
                assert len(stuck.received) == SHARE * workers
                assert not release.is_set()
        finally:
            release.set()


async def test_names_that_hang_when_registered_hold_up_no_other_organizations_requests(
    api: Api, session: AsyncSession, settings: Settings
) -> None:
    hanging: list[str] = []
    release = asyncio.Event()

    async def lookup(host: str, _: int) -> list[str]:
        if host.endswith(".hang.test"):
            hanging.append(host)
            await release.wait()
            raise OSError(f"{host}: no answer")
        return ["127.0.0.1"]

    noisy = await _organization(api, session)
    calm = await _organization(api, session)
    with egress.resolved_by(lookup):
        # More registrations at once than the pool has connections (3).
        registering = [
            asyncio.create_task(
                api.post(
                    "/v1/webhook-endpoints",
                    noisy["key"],
                    json={"url": f"http://n{index}.hang.test/hook"},
                )
            )
            for index in range(4)
        ]
        try:
            await _until(lambda: len(hanging) == 4, "every registration's lookup under way")
            async with asyncio.timeout(WITHIN):
                submission_id = await _submit(api, calm)
                read = await api.get(
                    f"/v1/forms/{calm['form']}/submissions/{submission_id}", calm["key"]
                )
                hosted = await api.client.post(f"/f/{calm['form']}", data=ANSWERS)
                listed = await api.get("/v1/webhook-endpoints", calm["key"])
            assert (read.status_code, hosted.status_code, listed.status_code) == (200, 303, 200)
            assert not release.is_set()
            assert all(not task.done() for task in registering)
        finally:
            release.set()
        refused = await asyncio.gather(*registering)
    for answer in refused:
        assert answer.status_code == 422
        assert answer.json()["errors"][0]["detail"].endswith("does not resolve")


@pytest.mark.parametrize("workers", [1, 2])
async def test_names_that_hang_at_delivery_hold_up_no_other_organization(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings, workers: int
) -> None:
    hang = False
    hanging: list[str] = []
    release = asyncio.Event()

    async def lookup(host: str, _: int) -> list[str]:
        if hang and host.endswith(".hang.test"):
            hanging.append(host)
            await release.wait()
            raise OSError(f"{host}: no answer")
        return ["127.0.0.1"]

    async with Receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        noisy = await _organization(api, session)
        calm = await _organization(api, session)
        with egress.resolved_by(lookup):
            for index in range(8):
                await _endpoint(api, noisy, f"http://n{index}.hang.test:{port}/hook")
            await _endpoint(api, calm, f"http://calm.test:{port}/hook")
            hang = True  # from now on the noisy names never answer
            for _ in range(20):  # more than one worker claims of an organization at once
                await _submit(api, noisy)
            try:
                async with _workers(engine, settings, workers):
                    await _until(
                        lambda: len(hanging) >= SHARE * workers,
                        "the noisy organization's share of every worker looking names up",
                    )
                    submission_id = await _submit(api, calm)
                    await _until(
                        lambda: _carries(receiver.received, submission_id),
                        "the quiet organization's delivery",
                    )
                    assert len(hanging) == SHARE * workers
                    assert receiver.received
                    assert all(r.headers["host"].startswith("calm.test") for r in receiver.received)
            finally:
                release.set()


async def test_a_worker_never_claims_again_what_it_holds_when_its_clock_moves(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    one_at_a_time = settings.model_copy(
        update={"webhook_organization_concurrency": 1, "webhook_endpoint_concurrency": 1}
    )
    release = asyncio.Event()

    async def hang(_: Received) -> Answer:
        await release.wait()
        return 200, {}, b""

    worker = new_worker(engine, one_at_a_time)
    try:
        async with Receiver(hang) as receiver:
            org = await _organization(api, session)
            await _endpoint(api, org, receiver.url)
            for _ in range(3):
                await _submit(api, org)
            await worker.dispatch()
            assert await worker.claim() == 3  # one sending, two waiting for its slot
            # Past their leases on the service's clock, as a stepped clock would be.
            with shift(worker.lease + timedelta(seconds=1)):
                await worker.step()
                release.set()
                await worker.drain()
            assert len(receiver.received) == 3
    finally:
        await worker.close()
    assert (worker.in_flight, worker.waiting, worker.turns) == ({}, {}, deque())
    for counter in (
        worker.claimed_per_endpoint,
        worker.claimed_per_organization,
        worker.sending_per_endpoint,
        worker.sending_per_organization,
    ):
        assert counter == Counter()


async def test_a_round_of_fan_out_writes_a_bounded_number_of_deliveries(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    org = await _organization(api, session)
    for index in range(MAX_ENDPOINTS):
        await _endpoint(api, org, f"http://127.0.0.1:9/{index}")
    events = 2 * FAN_OUT_ROWS // MAX_ENDPOINTS + 1
    for _ in range(events):
        await _submit(api, org)
    worker = new_worker(engine, settings)
    try:
        rounds = [await worker.dispatch() for _ in range(4)]
    finally:
        await worker.close()

    per_round = FAN_OUT_ROWS // MAX_ENDPOINTS
    # Every event, in bounded rounds; the form's creation, before any endpoint, rides along.
    assert rounds == [1 + per_round, per_round, 1, 0]


# PostgreSQL's to prove: SQLite's one writer holds everything anyway.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("writing", ["fan-out", "outcomes"])
async def test_an_endpoint_deleted_while_a_worker_writes_about_it_waits_for_the_write(
    api: Api, session: AsyncSession, engine: AsyncEngine, writing: str
) -> None:
    """Else the worker's insert broke a foreign key, and its failed step held
    up every organization's deliveries while it backed off."""
    org = await create_org(session)
    _, key = await create_key(session, org, scopes=SCOPES)
    await session.commit()
    created = await api.post("/v1/webhook-endpoints", key, json={"url": "http://127.0.0.1:9/"})
    endpoint_id = created.json()["id"]
    async with session_scope(async_sessionmaker(engine, expire_on_commit=False)) as worker:
        if writing == "fan-out":
            await repository.enabled_endpoints(worker, [org.id])
        else:
            await repository.hold_endpoints(worker, [endpoint_id])
        deleting = asyncio.create_task(api.delete(f"/v1/webhook-endpoints/{endpoint_id}", key))
        await asyncio.sleep(0.3)
        assert not deleting.done()  # the delete waits for the worker's transaction
        event = repository.OutboxEvent(
            seq=1,
            xid=0,
            id="evt_1",
            organization_id=org.id,
            type="submission.created",
            form_id=None,
            occurred_at=utcnow(),
        )
        await repository.add_deliveries(worker, [_delivery_row(event, endpoint_id, utcnow())])
    assert (await deleting).status_code == 204  # then takes the new delivery with it
