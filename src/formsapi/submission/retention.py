"""How long the change feed remembers deletes: tombstones older than
FORMSAPI_TOMBSTONE_DAYS are purged, a batch per transaction, by the sweeps
each serving process runs (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import session_scope
from formsapi.kit.time import utcnow
from formsapi.submission import repository

BATCH = 5000


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
