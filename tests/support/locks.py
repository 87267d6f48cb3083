"""A statement that waits in the database: PostgreSQL's, on a lock another
connection holds (a database that stopped answering, for as long as a test needs)."""

import asyncio
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

LOCK_SUBMISSIONS = "LOCK TABLE submissions IN ACCESS EXCLUSIVE MODE"


async def statement_waiting_on_a_lock(
    engine: AsyncEngine, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """Until a statement in the engine's database waits on a lock."""
    for _ in range(300):
        async with engine.connect() as connection:
            waiting = await connection.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if waiting.scalar():
                return
        await sleep(0.05)
    raise AssertionError("no statement waited on the lock")
