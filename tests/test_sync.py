"""Keeping a copy complete: clients sync while 50 writers create, edit and
delete submissions of several forms through two server processes, one with
its clock two seconds behind (libfaketime), as two hosts drift.

The client that follows the change feed ends with exactly the server's set,
every time, having seen every form's changes in order. A client that follows
the old advice (keep the newest `submittedAt`, ask for `since` it) keeps
deleted rows and, on SQLite, loses rows in the same run: that is why the
feed exists. And a server killed mid-write loses no change it acknowledged.
"""

import asyncio
import glob
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from formsapi.db.engine import create_engine
from formsapi.models import Submission
from formsapi.tenancy import scoped
from tests.conftest import service_unavailable
from tests.support.servers import Server, clean_env, start_server, stop_servers
from tests.support.shared_database import Setup, shared_database, tenant
from tests.support.writers import ENOUGH, WRITERS, Writers

WRITING_SECONDS = 3.0
FORMS = 3
# Two seconds: with posts written in batches, half a second no longer made
# the `since` recipe lose a row in every run.
SKEW = "-2"  # seconds, as libfaketime reads it


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database per engine, shared by this file's tests (each has
    an organization of its own), as are the servers on it."""
    with shared_database(request, tmp_path_factory.mktemp("sync")) as url:
        yield url


@pytest.fixture
def setup(database: str) -> Setup:
    return asyncio.run(tenant(database, forms=FORMS))


@dataclass
class Pair:
    """Two servers on the database: the first on this host's clock, the
    second two seconds behind. Started once for the file's tests on an
    engine (a start costs seconds of CPU); one a test killed is started
    again for the next."""

    directory: Path
    envs: list[dict[str, str]]
    servers: list[Server] = field(default_factory=list)
    starts: int = 0

    def running(self) -> list[Server]:
        if not self.servers:
            self.servers = [self._start(n) for n in range(len(self.envs))]
        else:
            self.servers = [
                server if server.process.poll() is None else self._start(n)
                for n, server in enumerate(self.servers)
            ]
        for server in self.servers:
            server.wait_until_healthy()
        return list(self.servers)

    def _start(self, n: int) -> Server:
        self.starts += 1
        name = f"{('on-time', 'behind')[n]}-{self.starts}"
        return start_server(self.directory, self.envs[n], name, ("--no-access-log",))


@pytest.fixture(scope="module")
def pair(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    libraries = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    if not libraries:
        service_unavailable("libfaketime (apt-get install faketime)")
    env = clean_env(database_url=database, rate_limit_enabled="false")
    # Preloaded rather than through the `faketime` command, whose child would
    # outlive it when it is killed. Timeouts and asyncio keep the real
    # monotonic clock: only the wall clock drifts. And so do the timed waits
    # on condition variables (FORCE_MONOTONIC_FIX off): with the fix, which
    # libfaketime turns on by itself for this glibc, the interpreter's lock
    # handoffs between threads woke early, over and over, and the server
    # answered a fifth as many requests a second.
    skewed = env | {
        "LD_PRELOAD": libraries[0],
        "FAKETIME": SKEW,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    }
    started = Pair(tmp_path_factory.mktemp("servers"), [env, skewed])
    try:
        yield started
    finally:
        stop_servers(started.servers)


@pytest.fixture
def servers(pair: Pair) -> list[Server]:
    return pair.running()


class FeedClient:
    """The loop of docs/guides/syncing.md: apply each page of each form's feed, keep `next`."""

    def __init__(self, setup: Setup, clients: list[httpx.AsyncClient]) -> None:
        self.setup = setup
        self.clients = clients
        self.copy: dict[str, dict[str, Any]] = {}
        self.cursors = dict.fromkeys(setup.forms, 0)
        self.pages = 0

    async def catch_up(self, form: str) -> None:
        while True:
            client = self.clients[self.pages % len(self.clients)]
            self.pages += 1
            response = await client.get(
                f"/v1/forms/{form}/submissions/changes",
                params={"after": self.cursors[form], "limit": 50},
            )
            if response.status_code == 503:
                continue
            assert response.status_code == 200, response.text
            page = response.json()
            for item in page["data"]:
                # In order, and never at or behind what was already seen.
                assert item["changeSeq"] > self.cursors[form], (item, self.cursors[form])
                self.cursors[form] = item["changeSeq"]
                if item.get("deleted"):
                    self.copy.pop(item["id"], None)
                else:
                    self.copy[item["id"]] = item
            assert page["next"] == self.cursors[form]
            if not page["hasMore"]:
                return

    async def follow(self, writing: asyncio.Event) -> None:
        while True:
            finished = not writing.is_set()  # read before a pass: the last pass sees all
            for form in self.setup.forms:
                await self.catch_up(form)
            if finished:
                return
            await asyncio.sleep(0.01)


class SinceClient:
    """The advice the feed replaces: keep the newest `submittedAt` stored,
    page through `since` it."""

    def __init__(self, setup: Setup, client: httpx.AsyncClient) -> None:
        self.setup = setup
        self.client = client
        self.copy: dict[str, dict[str, Any]] = {}
        self.newest: dict[str, str | None] = dict.fromkeys(setup.forms)

    async def poll(self, form: str) -> None:
        page, found = 1, []
        while True:
            params: dict[str, Any] = {"page": page, "limit": 100}
            if self.newest[form]:
                params["since"] = self.newest[form]
            response = await self.client.get(f"/v1/forms/{form}/submissions", params=params)
            if response.status_code == 503:
                continue
            data = response.json()["data"]
            if not data:
                break
            found.extend(data)
            page += 1
        for item in found:
            self.copy[item["id"]] = item
            newest = self.newest[form]
            if newest is None or item["submittedAt"] > newest:
                self.newest[form] = item["submittedAt"]

    async def follow(self, writing: asyncio.Event) -> None:
        while True:
            finished = not writing.is_set()
            for form in self.setup.forms:
                await self.poll(form)
            if finished:
                return
            await asyncio.sleep(0.01)


async def _server_set(setup: Setup) -> dict[str, tuple[dict[str, Any], int, int]]:
    """Every live submission as the database holds it: answers, version, number."""
    engine = create_engine(setup.database_url)
    async with engine.connect() as connection:
        rows = await connection.execute(
            select(
                Submission.id, Submission.answers, Submission.version, Submission.change_seq
            ).where(scoped(Submission, setup.organization_id))
        )
        found = {id_: (answers, version, seq) for id_, answers, version, seq in rows}
    await engine.dispose()
    return found


def _clients(setup: Setup, servers: list[Server]) -> list[httpx.AsyncClient]:
    return [
        httpx.AsyncClient(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {setup.secret}"},
            timeout=60,
            limits=httpx.Limits(max_connections=WRITERS + 4),
        )
        for server in servers
    ]


def _as_held(copy: dict[str, dict[str, Any]]) -> dict[str, tuple[dict[str, Any], int, int]]:
    return {
        id_: (item["answers"], item["version"], item["changeSeq"]) for id_, item in copy.items()
    }


async def test_a_client_following_the_feed_ends_with_exactly_the_servers_set(
    setup: Setup, servers: list[Server]
) -> None:
    clients = _clients(setup, servers)
    writers = Writers(setup, clients, seed=1)
    feed = FeedClient(setup, clients)
    since = SinceClient(setup, clients[0])
    writing = asyncio.Event()
    writing.set()
    until = asyncio.get_running_loop().time() + WRITING_SECONDS
    syncing = [asyncio.create_task(c.follow(writing)) for c in (feed, since)]

    await asyncio.gather(*(writers.write(until) for _ in range(WRITERS)))
    writing.clear()
    await asyncio.gather(*syncing)
    for client in clients:
        await client.aclose()

    server = await _server_set(setup)
    assert len(writers.seen.created) >= ENOUGH
    assert writers.seen.deleted, "no deletes were made"
    assert any(version > 1 for version in writers.seen.versions.values()), "no edits were made"
    assert _as_held(feed.copy) == server
    # The same run through `since`: it never sees a delete. On SQLite, where a
    # submission's time is its process's clock, rows committed by the server
    # behind, after a newer time from the other was seen, are skipped for
    # good; on PostgreSQL times are the database's, read under the form's
    # lock, so clock drift between hosts no longer loses them that way.
    deleted = set(writers.seen.deleted)
    never_seen = set(server) - set(since.copy)
    kept_deleted = set(since.copy) & deleted
    if setup.database_url.startswith("sqlite"):
        assert never_seen, "the since recipe lost no row this time"
    assert kept_deleted, "the since recipe saw deletes"


async def test_a_server_killed_mid_write_loses_no_acknowledged_change(
    setup: Setup, servers: list[Server]
) -> None:
    clients = _clients(setup, servers)
    writers = Writers(setup, clients, seed=2)
    loop = asyncio.get_running_loop()
    until = loop.time() + WRITING_SECONDS

    async def kill_first() -> None:
        await asyncio.sleep(WRITING_SECONDS / 2)
        writers.down.add(0)
        os.kill(servers[0].process.pid, signal.SIGKILL)

    await asyncio.gather(kill_first(), *(writers.write(until) for _ in range(WRITERS)))
    servers[0].process.wait(timeout=10)
    feed = FeedClient(setup, clients[1:])
    for form in setup.forms:
        await feed.catch_up(form)
    tombstones = await _tombstones(setup, clients[1])
    for client in clients:
        await client.aclose()

    seen = writers.seen
    assert len(seen.created) >= ENOUGH
    for id_ in seen.created:
        assert id_ in feed.copy or id_ in tombstones, id_
    for id_ in seen.deleted:
        assert id_ in tombstones, id_
    for id_, version in seen.versions.items():
        assert id_ in tombstones or feed.copy[id_]["version"] >= version, id_
    assert _as_held(feed.copy) == await _server_set(setup)


async def _tombstones(setup: Setup, client: httpx.AsyncClient) -> set[str]:
    found: set[str] = set()
    for form in setup.forms:
        after = 0
        while True:
            page = (
                await client.get(
                    f"/v1/forms/{form}/submissions/changes", params={"after": after, "limit": 1000}
                )
            ).json()
            found |= {item["id"] for item in page["data"] if item.get("deleted")}
            after = page["next"]
            if not page["hasMore"]:
                break
    return found
