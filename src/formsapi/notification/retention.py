from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db import purge_in_batches
from formsapi.kit.time import utcnow
from formsapi.notification import repository


async def purge_mails(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every mail done with (sent, skipped or failed) older than `days`; how many went."""
    return await purge_in_batches(sessionmaker, repository.purge, utcnow() - timedelta(days=days))
