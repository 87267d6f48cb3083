"""How long the change feed remembers deletes: tombstones older than
FORMSAPI_TOMBSTONE_DAYS are purged, a batch per transaction, by the sweeps
each serving process runs (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import purge_in_batches
from formsapi.kit.time import utcnow
from formsapi.submission import repository


async def purge_tombstones(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every tombstone older than `days`; how many went."""
    return await purge_in_batches(
        sessionmaker, repository.purge_tombstones, utcnow() - timedelta(days=days)
    )
