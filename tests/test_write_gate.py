"""SQLite's writers take turns at the write gate (kit/write_gate.py): every
way a write transaction ends gives the turn back, and a writer of another
engine (another process) waits for it, then writes."""

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from formsapi.db.engine import create_engine
from formsapi.db.errors import locked


@pytest.fixture
async def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'gate.db'}"
    engine = create_engine(url)
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE t (id TEXT PRIMARY KEY)"))
    await engine.dispose()
    return url


async def test_every_end_of_a_write_gives_the_turn_back(url: str) -> None:
    engine = create_engine(url, pool_timeout=2)
    insert = text("INSERT INTO t (id) VALUES (:id)")
    async with engine.begin() as connection:  # commit
        await connection.execute(insert, {"id": "org_1"})
    async with engine.connect() as connection:  # rollback
        await connection.begin()
        await connection.execute(insert, {"id": "org_2"})
        await connection.rollback()
    async with engine.connect() as connection:  # closed without either
        await connection.begin()
        await connection.execute(insert, {"id": "org_3"})
    connection = await engine.connect()
    transaction = await connection.begin()
    await connection.execute(insert, {"id": "org_5"})
    await connection.invalidate()  # the connection given up mid-transaction
    await transaction.rollback()
    await connection.close()
    async with engine.begin() as connection:  # would wait 2 s, then fail, had any kept it
        await connection.execute(insert, {"id": "org_4"})
        count = await connection.scalar(text("SELECT count(*) FROM t"))
    assert count == 2
    await engine.dispose()


async def test_another_processs_writer_waits_its_turn_then_writes(url: str) -> None:
    first, second = create_engine(url, pool_timeout=5), create_engine(url, pool_timeout=0.5)
    holder = await first.connect()
    await holder.begin()
    await holder.execute(text("INSERT INTO t (id) VALUES ('a')"))

    # While the first holds its turn, a short wait runs out as SQLite's own would...
    with pytest.raises(OperationalError) as refused:
        async with second.begin() as connection:
            await connection.execute(text("SELECT 1"))
    assert locked(refused.value)

    # ...and a writer that can wait gets its turn once the first commits.
    third = create_engine(url, pool_timeout=5)

    async def write() -> None:
        async with third.begin() as connection:
            await connection.execute(text("INSERT INTO t (id) VALUES ('b')"))

    waiting = asyncio.create_task(write())
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await holder.commit()
    await holder.close()
    await asyncio.wait_for(waiting, 5)
    async with second.connect() as connection:
        names = await connection.scalars(text("SELECT id FROM t ORDER BY id"))
        assert list(names) == ["a", "b"]
    for engine in (first, second, third):
        await engine.dispose()
