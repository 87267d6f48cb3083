"""Counts added up in the process and written every few seconds.

Some counts come with requests anyone may send: views of a public page,
posts refused as spam. Writing each in a transaction of its own would put a
write on every such request, and on SQLite take the one write lock from the
posts. They are added up here instead, and each process writes its own
every `every` seconds (sooner when `MOST_HELD` distinct counts are held),
and when it stops, by statements that add: several processes never
overwrite each other's. The figures are so at most `every` seconds behind; a
process killed without stopping loses its last `every` seconds of them, and
nothing else."""

import asyncio
import logging
from collections import Counter
from contextlib import suppress
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

log = logging.getLogger("formsapi")

# Distinct counts held before a write is made at once, whatever the time:
# memory stays bounded however many forms, hours and reasons are counted.
MOST_HELD = 10_000

K = TypeVar("K")


class HeldCounts(Generic[K]):
    """Counts by key, written by `write` (which a subclass gives) in one
    transaction per flush."""

    what = "counts"  # named in the log when a write fails

    def __init__(self, sessionmaker: async_sessionmaker[Any], every: float) -> None:
        self._sessionmaker = sessionmaker
        self.every = every
        self._held: Counter[K] = Counter()
        self._full = asyncio.Event()
        self._lock = asyncio.Lock()

    def count(self, key: K, by: int = 1) -> None:
        """Add to a count: written with the next flush."""
        self._held[key] += by
        if len(self._held) >= MOST_HELD:
            self._full.set()

    async def write(self, session: AsyncSession, held: Counter[K]) -> None:
        """Add `held` to the counts kept, in the caller's transaction."""
        raise NotImplementedError

    async def flush(self) -> None:
        """Write what is held. On failure it is held again, for the next flush."""
        async with self._lock:
            held, self._held = self._held, Counter()
            self._full.clear()
            if not held:
                return
            try:
                async with self._sessionmaker() as session:
                    await self.write(session, held)
                    await session.commit()
            except Exception:
                log.exception("%s not written; kept for the next try", self.what)
                self._held.update(held)
                if len(self._held) >= MOST_HELD:
                    self._full.set()

    async def run(self) -> None:
        """Flush every `every` seconds (or when full), until cancelled."""
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self.every)
            await self.flush()
            if self._full.is_set():  # held again: the database is away, wait for it
                await asyncio.sleep(self.every)
