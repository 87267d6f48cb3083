"""A process's background loops start together and stop together: a loop
that holds work finishes it once asked, an endless one is cancelled, and
one that failed does not keep the others from stopping."""

import asyncio

import pytest

from formsapi.kit.loops import Background


async def test_loops_start_together_and_each_stops_its_own_way() -> None:
    background = Background()
    ticks = 0
    finished: list[str] = []

    async def endless() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    async def holding_work(stop: asyncio.Event) -> None:
        await stop.wait()
        await asyncio.sleep(0.01)  # what it holds, finished after the stop
        finished.append("held work")

    background.add_endless("counting", endless)
    background.add("delivering", holding_work)
    background.start()
    await asyncio.sleep(0.02)
    await background.stop()
    after = ticks
    await asyncio.sleep(0.01)

    assert background.names == ["counting", "delivering"]
    assert after > 0
    assert ticks == after  # cancelled: it counts no more
    assert finished == ["held work"]


async def test_a_failed_loop_is_logged_and_the_others_still_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    background = Background()
    stopped: list[str] = []

    async def failing() -> None:
        raise RuntimeError("the database went away")

    async def steady(stop: asyncio.Event) -> None:
        await stop.wait()
        stopped.append("steady")

    background.add_endless("failing", failing)
    background.add("steady", steady)
    background.start()
    await asyncio.sleep(0)
    await background.stop()

    assert stopped == ["steady"]
    assert "formsapi failing failed" in caplog.text
