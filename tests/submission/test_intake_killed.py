"""A server killed (SIGKILL) while it writes batches of posts to one form:
every post it acknowledged is stored as acknowledged, and what it had not
committed left nothing behind, not a number, a count or an event."""

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from formsapi.db.engine import create_engine
from formsapi.models import Event, EventOutbox, Form, Submission, SubmissionCount
from formsapi.tenancy import scoped, unscoped
from tests.support.servers import Server, clean_env, start_server, stop_servers
from tests.support.shared_database import Setup, shared_database, tenant

POSTERS = 32
ANSWERS = {"name": "Ada", "colors": "red"}


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    with shared_database(request, tmp_path) as url:
        yield asyncio.run(tenant(url, forms=1))


@pytest.fixture
def server(setup: Setup, tmp_path: Path) -> Iterator[Server]:
    env = clean_env(database_url=setup.database_url, rate_limit_enabled="false")
    # No worker: the outbox rows of every committed event stay to be counted.
    started = start_server(tmp_path, env | {"FORMSAPI_WEBHOOK_WORKER": "off"}, "intake")
    try:
        started.wait_until_healthy()
        yield started
    finally:
        stop_servers([started])


async def test_a_server_killed_mid_batch_keeps_what_it_acknowledged_and_nothing_else(
    setup: Setup, server: Server
) -> None:
    form_id = setup.forms[0]
    acknowledged: dict[str, int] = {}
    unanswered = 0
    killed = asyncio.Event()
    enough = asyncio.Event()  # set once enough posts were acknowledged to kill mid-stream

    async def post(client: httpx.AsyncClient) -> None:
        nonlocal unanswered
        while not killed.is_set():
            try:
                response = await client.post(
                    f"/v1/forms/{form_id}/submissions", json={"answers": ANSWERS}
                )
            except httpx.TransportError:
                unanswered += 1
                return
            assert response.status_code == 201, response.text
            acknowledged[response.json()["id"]] = response.json()["changeSeq"]
            if len(acknowledged) >= 300:
                enough.set()

    async def kill() -> None:
        await enough.wait()
        os.kill(server.process.pid, signal.SIGKILL)
        killed.set()

    async with httpx.AsyncClient(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {setup.secret}"},
        timeout=60,
        limits=httpx.Limits(max_connections=POSTERS),
    ) as client:
        await asyncio.gather(kill(), *(post(client) for _ in range(POSTERS)))
    server.process.wait(timeout=10)

    assert unanswered, "the kill found no post in flight"
    engine = create_engine(setup.database_url)
    org = setup.organization_id
    async with engine.connect() as connection:
        stored = dict(
            (
                await connection.execute(
                    select(Submission.id, Submission.change_seq).where(
                        scoped(Submission, org), Submission.form_id == form_id
                    )
                )
            ).all()
        )
        form = (
            await connection.execute(
                select(Form.response_count, Form.change_seq).where(
                    scoped(Form, org), Form.id == form_id
                )
            )
        ).one()
        hourly = await connection.scalar(
            select(func.sum(SubmissionCount.count)).where(scoped(SubmissionCount, org))
        )
        events = (
            await connection.execute(
                select(Event.subject_id, Event.seq).where(
                    scoped(Event, org), Event.type == "submission.created"
                )
            )
        ).all()
        outbox = await connection.scalar(
            unscoped(select(func.count()).select_from(EventOutbox), "the test's own database")
        )
    await engine.dispose()

    for id_, change_seq in acknowledged.items():
        assert stored.get(id_) == change_seq, id_
    assert sorted(stored.values()) == list(range(1, len(stored) + 1))
    assert form.response_count == form.change_seq == hourly == len(stored)
    assert sorted(str(subject) for subject, _ in events) == sorted(stored)
    # Every event's outbox row, and one for the form's creation.
    assert outbox == len(events) + 1
