"""The fair-share thread (kit/fair.py): work runs off the event loop, tenants
take turns, and a tenant's waiting work is bounded."""

import asyncio
import threading
from functools import partial

import pytest

from formsapi.kit.fair import FairShare, TooMuchWork


@pytest.fixture
def fair() -> FairShare:
    return FairShare(waiting_max=100)


async def test_tenants_take_turns_one_job_each(fair: FairShare) -> None:
    started = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def job(name: str) -> str:
        if name == "a1":
            started.set()
            release.wait(10)
        order.append(name)
        return name

    # a1 holds the thread while a2..a5 and then b1 and c1 wait.
    first = asyncio.create_task(fair.run("a", 1, lambda: job("a1")))
    await asyncio.to_thread(started.wait, 10)
    waiting = [fair.run("a", 1, partial(job, f"a{i}")) for i in range(2, 6)]
    others = [fair.run("b", 1, lambda: job("b1")), fair.run("c", 1, lambda: job("c1"))]
    results = asyncio.gather(*waiting, *others)
    await asyncio.sleep(0.01)
    release.set()

    assert await first == "a1"
    assert await results == ["a2", "a3", "a4", "a5", "b1", "c1"]
    # B and C waited for one more of A's jobs, not for all four.
    assert order == ["a1", "a2", "b1", "c1", "a3", "a4", "a5"]
    fair.close()


async def test_the_loop_runs_on_while_the_thread_works(fair: FairShare) -> None:
    release = threading.Event()
    working = asyncio.create_task(fair.run("a", 1, lambda: release.wait(10)))
    ticks = 0
    for _ in range(20):  # each sleep needs the loop: it would not come back if blocked
        await asyncio.sleep(0.001)
        ticks += 1
    assert not working.done()
    release.set()
    assert await working is True
    assert ticks == 20
    fair.close()


async def test_a_tenants_waiting_work_is_bounded_and_others_are_not_refused(
    fair: FairShare,
) -> None:
    release = threading.Event()
    held = asyncio.create_task(fair.run("a", 60, lambda: release.wait(10)))
    await asyncio.sleep(0.01)

    with pytest.raises(TooMuchWork):
        await fair.run("a", 50, lambda: True)
    others = asyncio.create_task(fair.run("b", 100, lambda: "b"))
    fits = asyncio.create_task(fair.run("a", 40, lambda: "a"))
    await asyncio.sleep(0.01)
    release.set()

    assert await held is True
    assert await others == "b"
    assert await fits == "a"
    # Once done, its room is back; and one job alone always fits.
    assert await fair.run("a", 1_000, lambda: "big") == "big"
    fair.close()


async def test_an_error_reaches_the_caller_and_the_thread_goes_on(fair: FairShare) -> None:
    def broken() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await fair.run("a", 1, broken)
    assert await fair.run("a", 1, lambda: 2) == 2
    fair.close()


async def test_closing_fails_the_jobs_not_begun_and_lets_the_one_on_the_thread_finish(
    fair: FairShare,
) -> None:
    started, release = threading.Event(), threading.Event()

    def first() -> str:
        started.set()
        release.wait(10)
        return "done"

    running = asyncio.create_task(fair.run("a", 1, first))
    await asyncio.to_thread(started.wait, 10)
    waiting = asyncio.create_task(fair.run("b", 1, lambda: "never"))
    await asyncio.sleep(0.01)

    closing = asyncio.create_task(asyncio.to_thread(fair.close))
    await asyncio.sleep(0.01)
    release.set()
    await closing

    assert await running == "done"
    with pytest.raises(RuntimeError, match="stopped"):
        await waiting
