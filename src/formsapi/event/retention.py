"""How long events are kept: FORMSAPI_EVENT_DAYS, purged a batch per
transaction by the sweeps each serving process runs (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import session_scope
from formsapi.event import repository
from formsapi.kit.time import utcnow

BATCH = 5000


async def purge_events(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every event older than `days`; how many went."""
    before = utcnow() - timedelta(days=days)
    purged = 0
    while True:
        async with session_scope(sessionmaker) as session:
            batch = await repository.purge(session, before, BATCH)
        purged += batch
        if batch < BATCH:
            return purged
