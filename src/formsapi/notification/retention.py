from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import purge_in_batches
from formsapi.kit.time import utcnow
from formsapi.notification import repository
from formsapi.notification.service import day_of


async def purge_mails(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every mail done with (sent, skipped or failed) older than `days`; how many went."""
    return await purge_in_batches(sessionmaker, repository.purge, utcnow() - timedelta(days=days))


async def purge_copy_counts(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Purge the counts of copies of days before today's (UTC); how many went."""
    return await purge_in_batches(sessionmaker, repository.purge_copy_counts, day_of(utcnow()))
