"""Partial responses past their form's `resumeDays` are purged with their
answers, a batch per transaction, by the sweeps each serving process runs
(kit/sweeps.py); completed ones, whose answers went with completion, too."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import purge_in_batches
from formsapi.kit.time import utcnow
from formsapi.partial import repository


async def purge_partials(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Purge every expired partial; how many went."""
    return await purge_in_batches(sessionmaker, repository.purge, utcnow())
