"""A frozen Redis (the process stopped: connections open, nothing answered)
costs the service one short timeout, then nothing until Redis answers again:
every Redis call goes through one connection with one timeout and one circuit
breaker. Requests meanwhile are served, limited per process."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from tests.conftest import IN_CI, Api
from tests.support.factories import create_form, create_key, create_org
from tests.web.conftest import PASSWORD, Browser, add_member

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def private_redis(tmp_path: object) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Redis of this test's own, on loopback, that the test may freeze."""
    if not os.path.exists(REDIS_SERVER):
        if IN_CI:
            pytest.fail("redis-server is not installed (CI is set)")
        pytest.skip("redis-server is not installed")
    port = _free_port()
    process = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(200):
            try:
                if Redis.from_url(url, socket_timeout=1).ping():
                    break
            except (OSError, RedisError):
                time.sleep(0.02)
        yield url, process
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        process.wait(timeout=10)


# What a client sends Redis at the top level (never from inside a script, as
# the GETs and SETs of the limiter's script are): one per call that reached it.
_TOP_LEVEL = ("evalsha", "eval", "ping", "script", "hello", "client")


def _calls(url: str) -> int:
    client = Redis.from_url(url, socket_timeout=5)
    stats = client.info("commandstats")
    client.close()
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in _TOP_LEVEL)


@pytest.fixture
def settings(database_url: str, private_redis: tuple[str, object]) -> Settings:
    return Settings(database_url=database_url, redis_url=private_redis[0])


async def test_a_frozen_redis_costs_one_timeout_then_nothing_until_it_answers(
    api: Api, session: AsyncSession, private_redis: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, redis = private_redis
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    _, cached = await create_key(session, organization, user=owner)
    form = await create_form(session, organization)
    await session.commit()
    assert (await api.get("/v1/forms", cached)).status_code == 200  # cached, with Redis up

    before = _calls(url)
    redis.send_signal(signal.SIGSTOP)
    try:
        # Everything that talks to Redis: limits and the epoch (a cached key and
        # a new one), the hosted page's limit, sign-in's throttle, readiness.
        _, fresh = await create_key(session, organization, user=owner)
        await session.commit()
        answers: list[httpx.Response] = []
        # A bound on the whole, not a measurement: a call that waits on Redis for
        # as long as it is frozen (as the epoch's once did) must fail, not hang.
        async with asyncio.timeout(60):
            for _ in range(10):
                answers.append(await api.get("/v1/forms", cached))
                answers.append(await api.get("/v1/forms", fresh))
                answers.append(await api.get(f"/f/{form.id}"))
            signed_in = await Browser(api.client).sign_in_attempt(owner.email, PASSWORD)
            ready = await api.get("/readyz")
    finally:
        redis.send_signal(signal.SIGCONT)
    sent_while_frozen = _calls(url) - before
    after = await api.get("/v1/forms", cached)

    assert [a.status_code for a in answers] == [200] * 30
    assert signed_in.status_code == 303
    assert ready.status_code == 200
    assert ready.json()["components"]["redis"] == "unreachable"
    # One call timed out; the breaker let at most a couple of probes through
    # after that (each a cool-down later), where every request used to wait.
    assert 1 <= sent_while_frozen <= 3, sent_while_frozen
    assert after.status_code == 200
