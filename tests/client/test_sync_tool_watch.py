"""`formsapi-sync --watch` end to end: a real server on each engine, a copy
in each target database, fifty writers, and the tool killed with SIGKILL
and started again while it watches. The copy must end equal to the
server's data, row for row and value for value; a run with nothing new
writes nothing.

Each engine serves once and holds the copy once (SQLite's server into a
PostgreSQL copy and the other way round): the server and the copy meet
only over HTTP, so the same engine on both sides takes no path of its own."""

import asyncio
import random
import signal
from pathlib import Path

import httpx
import pytest

from tests.client.conftest import Live
from tests.client.sync_tool import (
    caught_up,
    commits_after,
    copied,
    everything,
    on_server,
    progress,
    sync,
    sync_process,
    watch,
)
from tests.support.shared_database import Setup
from tests.support.writers import ANSWERS, WRITERS, Writers

WRITING_SECONDS = 3.0


async def created_once_more(client: httpx.AsyncClient, form_id: str) -> None:
    for _ in range(60):  # a busy server may turn it away (503)
        response = await client.post(f"/v1/forms/{form_id}/submissions", json={"answers": ANSWERS})
        if response.status_code == 201:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"the server kept refusing a create: {response.status_code}")


@pytest.mark.parametrize(
    ("live", "target"), [("sqlite", "postgresql"), ("postgresql", "sqlite")], indirect=True
)
async def test_a_watching_copy_killed_twice_ends_equal_to_the_server(
    setup: Setup, live: Live, target: str, tmp_path: Path
) -> None:
    clients = [
        httpx.AsyncClient(
            base_url=live.base_url,
            headers={"Authorization": f"Bearer {setup.secret}"},
            timeout=60,
            limits=httpx.Limits(max_connections=WRITERS + 4),
        )
    ]
    writers = Writers(setup, clients, seed=16)
    loop = asyncio.get_running_loop()
    # Something to copy first, then the copy, then the writers with it watching.
    await asyncio.gather(*(writers.write(loop.time() + 0.5) for _ in range(10)))
    first = sync(live, setup, target)
    assert first.returncode == 0, first.stderr
    assert copied(target) == on_server(live, setup)

    log = tmp_path / "watch.log"
    watcher = watch(live, setup, target, log)
    writing = True
    rng = random.Random(16)  # noqa: S311 - reproducible moments

    async def kill_and_restart() -> None:
        # Each kill lands at a random moment after the watcher has committed
        # at least once since it started: not while it is still importing.
        nonlocal watcher, writing
        try:
            for kill in range(2):
                moved = await asyncio.to_thread(commits_after, target, progress(target))
                assert moved, log.read_text()
                if kill == 0:  # it holds the copy: a second run is turned away
                    # A process of its own: the writers go on meanwhile.
                    busy = await asyncio.to_thread(sync_process, live, setup, target)
                    assert busy.returncode == 5, busy.stderr
                    assert "Another formsapi-sync is writing to" in busy.stderr
                await asyncio.sleep(rng.uniform(0, 0.5))
                watcher.send_signal(signal.SIGKILL)
                await asyncio.to_thread(watcher.wait, 10)
                watcher = watch(live, setup, target, log)
        finally:
            writing = False

    async def write() -> None:
        await writers.write(loop.time() + WRITING_SECONDS)
        while writing:  # until both kills have landed
            await writers.write(loop.time() + 0.2)

    try:
        await asyncio.gather(kill_and_restart(), *(write() for _ in range(WRITERS)))
        # A change made after the last start: once it is copied, the last
        # watcher is surely past its start (its Ctrl-C handler in place).
        await created_once_more(clients[0], setup.forms[0])
        for client in clients:
            await client.aclose()
        assert await asyncio.to_thread(caught_up, live, setup, target), log.read_text()
        watcher.send_signal(signal.SIGINT)  # Ctrl-C: stops between pages
        assert watcher.wait(timeout=30) == 0, log.read_text()
    finally:  # a watcher left running would hold the scratch database's lock
        if watcher.poll() is None:
            watcher.kill()
    assert "Stopped between pages" in log.read_text()
    assert writers.seen.deleted
    assert any(v > 1 for v in writers.seen.versions.values())

    server_data = on_server(live, setup)
    assert copied(target) == server_data
    assert sum(len(rows) for rows in server_data.values()) > 0

    # Nothing new: a run writes nothing (not a row of any table), and says so.
    before = everything(target)
    assert {"formsapi_forms", "formsapi_columns", "formsapi_sync_state"} <= before.keys()
    again = sync(live, setup, target)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("up to date") == len(setup.forms), again.stdout
    assert everything(target) == before
    assert copied(target) == server_data
