"""Request bodies that arrive in part, then wait: a slow or stalled client."""

import asyncio
from collections.abc import AsyncIterator


class StalledBody:
    """A request body: its first part at once, the rest when released."""

    def __init__(self, first: bytes, rest: bytes = b"") -> None:
        self.first, self.rest = first, rest
        self.released = asyncio.Event()
        self.sent = 0  # parts the server has pulled

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.sent += 1
        yield self.first
        await self.released.wait()
        self.sent += 1
        yield self.rest


async def started(body: StalledBody) -> None:
    """Until the server has taken the first part (it is waiting for the rest)."""
    for _ in range(500):
        if body.sent:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the server never read the body")
