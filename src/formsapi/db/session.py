"""Sessions: a writing request's (one transaction, committed once at its
boundary: services and repositories never commit) and a reading one's
(autocommit), and units of work in batches."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.db.engine import autocommit


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


class WriteSession(AsyncSession):
    """A unit of work's session: one transaction, committed at its boundary.
    On SQLite its first statement takes the write lock (_sqlite_begin)."""


class ReadSession(AsyncSession):
    """A session whose statements each run in autocommit: on SQLite it never
    takes the write lock. Services that only read take this type, so that
    passing them a WriteSession (or any other session) fails type checking."""


def create_write_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[WriteSession]:
    return async_sessionmaker(engine, expire_on_commit=False, class_=WriteSession)


def create_read_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[ReadSession]:
    """ReadSessions on `engine` in autocommit (made so here if it is not already)."""
    return async_sessionmaker(autocommit(engine), expire_on_commit=False, class_=ReadSession)


AfterCommit = Callable[[AsyncSession], Awaitable[None]]
S = TypeVar("S", bound=AsyncSession)


@asynccontextmanager
async def session_scope(
    sessionmaker: async_sessionmaker[S], after_commit: AfterCommit | None = None
) -> AsyncIterator[S]:
    """One unit of work: commit on success, roll back on any error.

    `after_commit` runs once the commit is durable (it publishes side effects
    that must never run ahead of the data, like the auth epoch)."""
    async with sessionmaker() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        else:
            await session.commit()
            if after_commit is not None:
                await after_commit(session)


Purge = Callable[[AsyncSession, Any, int], Awaitable[int]]


async def purge_in_batches(
    sessionmaker: async_sessionmaker[AsyncSession], purge: Purge, before: Any, batch: int = 5000
) -> int:
    """Run `purge(session, before, batch)` a transaction at a time until a
    batch comes back short, so a retention sweep never holds one long
    transaction; how many rows went."""
    purged = 0
    while True:
        async with session_scope(sessionmaker) as session:
            found = await purge(session, before, batch)
        purged += found
        if found < batch:
            return purged
