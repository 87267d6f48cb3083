"""How long events are kept: FORMSAPI_EVENT_DAYS, purged a batch per
transaction by the sweeps each serving process runs (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import purge_in_batches
from formsapi.event import repository
from formsapi.kit.time import utcnow


async def purge_events(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every event older than `days`; how many went."""
    return await purge_in_batches(sessionmaker, repository.purge, utcnow() - timedelta(days=days))
