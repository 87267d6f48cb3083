"""Waiting between tries, as every loop that works through an outbox waits
(webhook deliveries, mail): a try that failed comes back later and later,
each wait jittered so that many retrying at once do not knock together; a
database that is away is asked less and less often; an idle loop sleeps
until it is woken or asked to stop."""

import asyncio
import random

JITTER = 0.2  # each wait within ±20% of its step


def jittered(step: float, rng: random.Random) -> float:
    return step * rng.uniform(1 - JITTER, 1 + JITTER)


def doubling(attempts: int, first: float, most: float, rng: random.Random) -> float:
    """The wait after the `attempts`-th failed try: `first`, doubling after
    each, at most `most`, jittered."""
    return jittered(min(most, first * 2 ** (attempts - 1)), rng)


class Outage:
    """How long a loop waits after its database could not be reached: half a
    second, doubling while it stays away, at most 30; back to nothing once a
    round goes through."""

    FIRST = 0.5
    MOST = 30.0

    def __init__(self) -> None:
        self.failures = 0

    def passed(self) -> None:
        self.failures = 0

    async def wait(self) -> None:
        self.failures += 1
        await asyncio.sleep(min(self.MOST, self.FIRST * 2**self.failures))


async def woken(*events: asyncio.Event, within: float) -> bool:
    """Wait until any of `events` is set or `within` seconds pass: whether one was."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        done, _ = await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return bool(done)
