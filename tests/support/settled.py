"""Waiting for events to settle: on PostgreSQL an event is listed once no
transaction that began writing before it is still running in its database. A
test's events may wait on its own server processes' transactions, so a test
reads events once they have settled, as a client would by asking again."""

import asyncio

from sqlalchemy import text

from formsapi.db.engine import create_engine
from formsapi.event.repository import HORIZON

HELD_BACK = text(f"SELECT EXISTS (SELECT 1 FROM events WHERE xid >= {HORIZON})")  # noqa: S608


async def events_settled(database_url: str, patience: float = 60.0) -> None:
    if not database_url.startswith("postgresql"):
        return  # SQLite's writers take turns: committed is settled
    engine = create_engine(database_url)
    try:
        async with asyncio.timeout(patience):
            while True:
                async with engine.connect() as connection:
                    if not (await connection.execute(HELD_BACK)).scalar():
                        return
                await asyncio.sleep(0.05)
    finally:
        await engine.dispose()
