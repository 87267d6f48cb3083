"""The busiest reads run on the driver; elsewhere they must read the same, and fail the same."""

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Column, MetaData, String, Table, bindparam, event, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db.hot import HotStatement
from formsapi.db.session import create_read_sessionmaker
from formsapi.form import repository as form_repository
from formsapi.submission import repository
from tests.support.factories import create_form, create_org, create_submission
from tests.support.locks import LOCK_SUBMISSIONS, statement_waiting_on_a_lock

START = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)


async def _three_a_minute_apart(session: AsyncSession) -> tuple[str, str]:
    """A form's organization and id, its three submissions made from START
    a minute apart, committed."""
    org = await create_org(session)
    form = await create_form(session, org)
    for minutes in range(3):
        await create_submission(
            session, form, submitted_at=START + timedelta(minutes=minutes), answers={"n": minutes}
        )
    await session.commit()
    return org.id, form.id


async def test_a_page_reads_the_same_inside_a_transaction_as_on_a_borrowed_connection(
    engine: AsyncEngine, session: AsyncSession
) -> None:
    org_id, form_id = await _three_a_minute_apart(session)

    async with create_read_sessionmaker(engine)() as read:
        borrowed = await repository.list_page(read, org_id, form_id, None, 0, 50)
    await session.connection()  # a transaction under way: the ordinary execution path
    assert session.in_transaction()
    inside = await repository.list_page(session, org_id, form_id, None, 0, 50)

    assert [tuple(row) for row in inside] == [tuple(row) for row in borrowed]
    assert [row[3] for row in inside] == [
        "2026-03-01T12:02:00.123Z",
        "2026-03-01T12:01:00.123Z",
        "2026-03-01T12:00:00.123Z",
    ]


async def test_a_forms_change_state_and_a_since_page_read_the_same_both_ways(
    engine: AsyncEngine, session: AsyncSession
) -> None:
    # A time bound as a parameter and a time read as a column: SQLite's
    # driver takes and gives them as text, which the types' processing turns
    # to and from datetimes on both paths alike.
    org_id, form_id = await _three_a_minute_apart(session)
    since = START + timedelta(seconds=30)

    async with create_read_sessionmaker(engine)() as read:
        borrowed = await form_repository.change_state(read, org_id, form_id)
        borrowed_page = await repository.list_page(read, org_id, form_id, since, 0, 50)
    await session.connection()
    inside = await form_repository.change_state(session, org_id, form_id)
    inside_page = await repository.list_page(session, org_id, form_id, since, 0, 50)

    assert borrowed == inside
    assert borrowed is not None
    assert isinstance(borrowed[2], datetime)
    assert [tuple(row) for row in borrowed_page] == [tuple(row) for row in inside_page]
    assert [row[3] for row in borrowed_page] == [
        "2026-03-01T12:02:00.123Z",
        "2026-03-01T12:01:00.123Z",
    ]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_failing_hot_read_on_sqlite_raises_as_sqlalchemys_execution_does(
    engine: AsyncEngine,
) -> None:
    # The error handlers know SQLAlchemy's errors (a lock held past the busy
    # timeout answers 503), not the driver's.
    missing = Table("no_such_table", MetaData(), Column("id", String))
    hot = HotStatement(select(missing.c.id).where(missing.c.id == bindparam("id")))
    async with create_read_sessionmaker(engine)() as read:
        with pytest.raises(OperationalError, match="no such table"):
            await hot.all(read, {"id": "x"})


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_hot_read_cancelled_before_its_answer_gives_its_connection_to_no_one(
    engine: AsyncEngine, session: AsyncSession
) -> None:
    # A request cancelled while the database has not answered its page read
    # (run on the driver, past SQLAlchemy): the connection's state is
    # unknown, and the pool must drop it, as it does for SQLAlchemy's own
    # statements, rather than lend it to the next request.
    org_id, form_id = await _three_a_minute_apart(session)
    dropped: list[Any] = []

    def on_invalidate(connection: Any, record: Any, error: BaseException | None) -> None:
        dropped.append(connection)

    pool = engine.sync_engine.pool
    event.listen(pool, "invalidate", on_invalidate)
    try:
        async with engine.connect() as locker:
            await locker.exec_driver_sql("SET LOCAL lock_timeout = '5s'")
            await locker.exec_driver_sql(LOCK_SUBMISSIONS)

            async def read() -> None:
                async with create_read_sessionmaker(engine)() as read:
                    await repository.list_page(read, org_id, form_id, None, 0, 50)

            reading = asyncio.create_task(read())
            await statement_waiting_on_a_lock(engine)
            reading.cancel()
            await asyncio.wait([reading], timeout=30)
            await locker.rollback()
    finally:
        event.remove(pool, "invalidate", on_invalidate)

    assert reading.cancelled()
    assert len(dropped) == 1  # the read's, and no other
