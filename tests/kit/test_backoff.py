"""How the outbox loops wait between tries (kit/backoff.py)."""

import asyncio
import random

from formsapi.kit.backoff import doubling, woken


def test_a_failed_try_waits_twice_as_long_each_time_up_to_the_most_jittered() -> None:
    rng = random.Random(7)  # noqa: S311 - jitter, not a secret
    waits = [doubling(attempts, 30.0, 3600.0, rng) for attempts in range(1, 10)]

    steps = [30.0 * 2**n for n in range(7)] + [3600.0, 3600.0]
    for wait, step in zip(waits, steps, strict=True):
        assert 0.8 * step <= wait <= 1.2 * step
    assert len(set(waits)) == len(waits)  # jittered: no two senders in step


async def test_an_idle_loop_wakes_when_told_and_not_before() -> None:
    wake, stop = asyncio.Event(), asyncio.Event()
    assert await woken(wake, stop, within=0.01) is False
    asyncio.get_running_loop().call_soon(stop.set)
    assert await woken(wake, stop, within=5) is True
