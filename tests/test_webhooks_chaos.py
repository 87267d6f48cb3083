"""Webhooks lose nothing: 50 writers create, edit and delete submissions
while the receiver fails at random (500, 429 with Retry-After, timeouts,
connections dropped without an answer) and the delivering process is
killed with SIGKILL and replaced. Once the receiver recovers, the events it
accepted, deduplicated by `webhook-id`, are exactly the organization's
events, each signed as the `standardwebhooks` verifier expects, and every
delivery counts the attempts its log shows (a claim the killed process never
sent is not one).

The receiver is a bare asyncio server, so it can drop a connection mid-request
as a crashing one would. The retry schedule is shortened through its setting
(seconds instead of days), the one knob that changes; the clock is real."""

import asyncio
import os
import random
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from standardwebhooks import Webhook

from formsapi.db.engine import create_engine
from formsapi.models import EventOutbox, WebhookAttempt, WebhookDelivery
from formsapi.tenancy import unscoped
from tests.support.servers import Process, Server, clean_env, command, start_server, stop_servers
from tests.support.shared_database import Setup, shared_database, tenant
from tests.support.writers import WRITERS, Writers

WRITING_SECONDS = 4.0
SCHEDULE = "0,0.2,0.5,1,1.5,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2"  # ~33 s: outlasts the chaos
SETTINGS = {
    "secret_key": "c" * 32,
    "webhook_allow_private_networks": "true",
    "webhook_retry_schedule": SCHEDULE,
    "webhook_timeout": "1",
    "rate_limit_enabled": "false",
}


@dataclass
class ChaosReceiver:
    """Answers at random until `healthy`; records what it accepted."""

    healthy: bool = False
    accepted: dict[str, tuple[bytes, dict[str, str]]] = field(default_factory=dict)
    refused: int = 0
    holding: int = 0  # requests being kept past the sender's timeout
    rng: random.Random = field(default_factory=lambda: random.Random(5))  # noqa: S311
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:] if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            roll = 1.0 if self.healthy else self.rng.random()
            if roll < 0.15:
                return  # dropped: closed without an answer
            if roll < 0.25:
                self.holding += 1
                try:
                    await asyncio.sleep(2)  # past the sender's timeout
                finally:
                    self.holding -= 1
                return
            if roll < 0.45:
                self.refused += 1
                writer.write(b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            elif roll < 0.6:
                self.refused += 1
                writer.write(
                    b"HTTP/1.1 429 Slow down\r\nretry-after: 1\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
            else:
                self.accepted.setdefault(headers["webhook-id"], (body, headers))
                writer.write(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # cancelled: the test is over and the server closing
        finally:
            writer.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    with shared_database(request, tmp_path) as url:
        yield asyncio.run(tenant(url, forms=3))


def _deliverer(setup: Setup, tmp_path: Path, name: str) -> Process | Server:
    """What delivers: `formsapi worker` with PostgreSQL; with SQLite, a
    `formsapi serve` whose own worker delivers (as that engine runs)."""
    env = clean_env(database_url=setup.database_url, **SETTINGS)
    if setup.database_url.startswith("sqlite"):
        server = start_server(tmp_path, env | {"FORMSAPI_WEBHOOK_WORKER": "on"}, name)
        server.wait_until_healthy()
        return server
    return command(tmp_path, env, name, "worker")


def _process(deliverer: Process | Server) -> Process:
    return deliverer.process if isinstance(deliverer, Server) else deliverer


async def _outstanding(setup: Setup) -> bool:
    """Whether an event is still to be fanned out or a delivery to succeed."""
    engine = create_engine(setup.database_url)
    async with engine.connect() as connection:
        undispatched = select(func.count()).select_from(EventOutbox)
        unsent = unscoped(
            select(func.count()).where(WebhookDelivery.status != "succeeded"),
            "the test's one organization",
        )
        found = [(await connection.execute(q)).scalar_one() for q in (undispatched, unsent)]
    await engine.dispose()
    return any(found)


async def _miscounted(setup: Setup) -> dict[str, tuple[int, int]]:
    """Deliveries whose count differs from their log: id -> (count, logged)."""
    engine = create_engine(setup.database_url)
    logged = (
        select(func.count())
        .where(WebhookAttempt.delivery_id == WebhookDelivery.id)
        .correlate(WebhookDelivery)
        .scalar_subquery()
    )
    statement = unscoped(
        select(WebhookDelivery.id, WebhookDelivery.attempts, logged.label("logged")),
        "the test's one organization",
    )
    async with engine.connect() as connection:
        rows = (await connection.execute(statement)).all()
    await engine.dispose()
    return {row.id: (row.attempts, row.logged) for row in rows if row.attempts != row.logged}


async def test_every_event_reaches_a_failing_receiver_across_a_killed_worker(
    setup: Setup, tmp_path: Path
) -> None:
    chaos = ChaosReceiver()
    listening = await asyncio.start_server(chaos.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    env = clean_env(database_url=setup.database_url, **SETTINGS, webhook_worker="off")
    api = start_server(tmp_path, env, "api", ("--no-access-log",))
    deliverers: list[Process | Server] = []
    try:
        api.wait_until_healthy()
        headers = {"Authorization": f"Bearer {setup.secret}"}
        async with httpx.AsyncClient(base_url=api.base_url, headers=headers, timeout=60) as client:
            created = await client.post(
                "/v1/webhook-endpoints", json={"url": f"http://127.0.0.1:{port}/hook"}
            )
            assert created.status_code == 201, created.text
            secret, since = created.json()["secret"], created.json()["createdAt"]
            deliverers.append(_deliverer(setup, tmp_path, "first"))

            writers = Writers(setup, [client], seed=3)
            loop = asyncio.get_running_loop()
            until = loop.time() + WRITING_SECONDS

            async def replace_deliverer() -> None:
                await asyncio.sleep(WRITING_SECONDS / 2)
                # Killed with an attempt in flight: claimed, never recorded.
                async with asyncio.timeout(60):
                    while not chaos.holding:  # noqa: ASYNC110 - the receiver's count is the signal
                        await asyncio.sleep(0.01)
                os.kill(_process(deliverers[0]).pid, signal.SIGKILL)
                _process(deliverers[0]).wait(timeout=10)
                deliverers.append(_deliverer(setup, tmp_path, "second"))

            await asyncio.gather(
                replace_deliverer(), *(writers.write(until) for _ in range(WRITERS))
            )
            # Chaos until the receiver has failed enough deliveries to show something.
            async with asyncio.timeout(60):
                while chaos.refused < 20:  # noqa: ASYNC110 - the receiver's count is the signal
                    await asyncio.sleep(0.1)
            chaos.healthy = True
            async with asyncio.timeout(120):
                while await _outstanding(setup):  # noqa: ASYNC110 - the outbox is the signal
                    await asyncio.sleep(0.25)
            miscounted = await _miscounted(setup)

            events: dict[str, str] = {}
            after = None
            while True:
                params = {"limit": 1000} | ({"after": after} if after else {})
                page = (await client.get("/v1/events", params=params)).json()
                # What happened once the endpoint existed (not the forms' creation).
                events |= {e["id"]: e["type"] for e in page["data"] if e["timestamp"] >= since}
                after = page["next"]
                if not page["hasMore"]:
                    break
    finally:
        listening.close()
        for deliverer in deliverers:
            process = _process(deliverer)
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        stop_servers([api])

    assert writers.seen.deleted, "no deletes were made"
    assert chaos.refused, "the receiver never failed"
    assert not miscounted, miscounted
    missing = {id_: events[id_] for id_ in set(events) - set(chaos.accepted)}
    assert not missing, missing
    assert set(chaos.accepted) == set(events)
    assert len(events) >= len(writers.seen.created)
    verifier = Webhook(secret)
    for body, received in chaos.accepted.values():
        verifier.verify(body, received)
