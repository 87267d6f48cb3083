"""How long the delivery log is kept: FORMSAPI_EVENT_DAYS, as the events
it delivered; swept by each serving process (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import session_scope
from formsapi.kit.time import utcnow
from formsapi.webhook import repository

BATCH = 5000


async def purge_deliveries(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge finished deliveries older than `days`, with their attempts; how many went."""
    before = utcnow() - timedelta(days=days)
    purged = 0
    while True:
        async with session_scope(sessionmaker) as session:
            batch = await repository.purge(session, before, BATCH)
        purged += batch
        if batch < BATCH:
            return purged
