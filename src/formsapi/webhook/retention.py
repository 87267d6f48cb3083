"""How long the delivery log, and what endpoints were subscribed to, are
kept: FORMSAPI_EVENT_DAYS, as the events they concern; swept by each serving
process (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import purge_in_batches
from formsapi.kit.time import utcnow
from formsapi.webhook import repository


async def purge_deliveries(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every finished delivery (with its attempts) older than `days`; how many went."""
    return await purge_in_batches(sessionmaker, repository.purge, utcnow() - timedelta(days=days))


async def purge_periods(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every subscription period that ended more than `days` ago; how many went."""
    return await purge_in_batches(
        sessionmaker, repository.purge_periods, utcnow() - timedelta(days=days)
    )
