"""Views and starts, counted in the process and written every few seconds.

A view is a GET of a public page: writing each in a transaction of its own
would put a write on every page load, and on SQLite take the one write lock
from the posts. They are added up here instead, and each process writes its
own every `every` seconds, and when it stops, by an upsert that adds: several
processes never overwrite each other's. The figures are so at most `every`
seconds behind; a process killed without stopping loses its last `every`
seconds of views and starts, and nothing else."""

import asyncio
import logging
from collections import Counter
from contextlib import suppress
from datetime import datetime

from sqlalchemy.ext.asyncio import async_sessionmaker

from formsapi.db import WriteSession
from formsapi.funnel import repository
from formsapi.funnel.steps import hour_of

log = logging.getLogger(__name__)

# Distinct counts held before a write is made at once, whatever the time:
# memory stays bounded however many forms and hours are counted.
MOST_HELD = 10_000

Key = tuple[str, str, datetime, int, str]


class Buffer:
    def __init__(self, sessionmaker: async_sessionmaker[WriteSession], every: float) -> None:
        self._sessionmaker = sessionmaker
        self.every = every
        self._held: Counter[Key] = Counter()
        self._full = asyncio.Event()
        self._lock = asyncio.Lock()

    def add(
        self, organization_id: str, form_id: str, version: int, at: datetime, step: str
    ) -> None:
        """Count one step of a form's funnel, in the hour of `at`: written with the next flush."""
        self._held[organization_id, form_id, hour_of(at), version, step] += 1
        if len(self._held) >= MOST_HELD:
            self._full.set()

    async def flush(self) -> None:
        """Write what is held. On failure it is held again, for the next flush."""
        async with self._lock:
            held, self._held = self._held, Counter()
            self._full.clear()
            if not held:
                return
            try:
                async with self._sessionmaker() as session:
                    await repository.add(session, held.items(), held=True)
                    await session.commit()
            except Exception:
                log.exception("funnel counts not written; kept for the next try")
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
