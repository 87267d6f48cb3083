"""How long the change feed remembers deletes: tombstones older than
FORMSAPI_TOMBSTONE_DAYS are purged, a batch per transaction, by a loop each
serving process runs (purges from several processes at once are harmless)."""

import asyncio
import logging
import random
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import session_scope
from formsapi.kit.time import utcnow
from formsapi.submission import repository

BATCH = 5000
EVERY = timedelta(hours=1)

log = logging.getLogger("formsapi")


async def purge_tombstones(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every tombstone older than `days`; how many went."""
    before = utcnow() - timedelta(days=days)
    purged = 0
    while True:
        async with session_scope(sessionmaker) as session:
            batch = await repository.purge_tombstones(session, before, BATCH)
        purged += batch
        if batch < BATCH:
            return purged


async def keep_purging(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> None:
    """Purge now and then, for as long as the process serves. A failure (the
    database away for a moment) waits for the next round."""
    every = EVERY.total_seconds()
    # Processes started together do not all sweep at once.
    await asyncio.sleep(random.uniform(0, 60))  # noqa: S311 - spreading load, not a secret
    while True:
        try:
            purged = await purge_tombstones(sessionmaker, days)
            if purged:
                log.info("purged %d tombstones older than %d days", purged, days)
        except Exception:
            log.exception("purging tombstones failed; trying again in an hour")
        await asyncio.sleep(every)
