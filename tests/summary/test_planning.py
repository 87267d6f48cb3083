"""A summary counted from a form's rows is planned on PostgreSQL for the
values it is given (db.planned_for_its_values), where every other statement
keeps the pool's one plan for any values: the setting must not outlive the
count on the connection the pool gives to the next request."""

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db import create_engine, create_read_sessionmaker, planned_for_its_values
from formsapi.summary import repository
from tests.conftest import Api
from tests.summary.test_held import TEAM, _posted

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


async def _planning(engine: AsyncEngine) -> str:
    async with engine.connect() as connection:
        return str((await connection.exec_driver_sql("SHOW plan_cache_mode")).scalar())


async def test_a_count_of_rows_is_planned_for_its_values_then_the_connection_as_before(
    api: Api, session: AsyncSession, engine: AsyncEngine, database_url: str
) -> None:
    organization_id, form_id, shown = await _posted(api, session, engine, ["team", "free"])
    one = create_engine(database_url, pool_size=1)  # the next request gets this connection
    try:
        async with create_read_sessionmaker(one)() as read:
            async with planned_for_its_values(read):
                inside = (await read.execute(text("SHOW plan_cache_mode"))).scalar()
            found = await repository.tallies(read, organization_id, form_id, TEAM, shown.counted)

        assert inside == "force_custom_plan"
        assert found.submissions == 1
        assert await _planning(one) == "force_generic_plan"
    finally:
        await one.dispose()


@pytest.mark.parametrize("cut", ["cancelled", "failed"])
async def test_a_count_cut_short_gives_no_connection_back_planned_for_its_values(
    api: Api, session: AsyncSession, engine: AsyncEngine, database_url: str, cut: str
) -> None:
    # A count that waits on the database (here: a lock another connection
    # holds) and is cancelled, or fails (its lock_timeout passed): the
    # connection must not serve the next request with the setting still made.
    organization_id, form_id, shown = await _posted(api, session, engine, ["team", "free"])
    one = create_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as locker:
            await locker.exec_driver_sql("LOCK TABLE submissions IN ACCESS EXCLUSIVE MODE")

            async def count() -> None:
                async with create_read_sessionmaker(one)() as read:
                    if cut == "failed":
                        await read.execute(text("SET lock_timeout = '200ms'"))
                    await repository.tallies(read, organization_id, form_id, TEAM, shown.counted)

            counting = asyncio.create_task(count())
            if cut == "cancelled":
                await _waiting_on_a_lock(engine)
                counting.cancel()
            await asyncio.wait([counting], timeout=30)
            await locker.rollback()

        if cut == "cancelled":
            assert counting.cancelled()
        else:
            assert isinstance(counting.exception(), DBAPIError)
        assert await _planning(one) == "force_generic_plan"
        assert one.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        await one.dispose()


async def _waiting_on_a_lock(engine: AsyncEngine) -> None:
    for _ in range(300):
        async with engine.connect() as connection:
            ungranted = await connection.exec_driver_sql(
                "SELECT count(*) FROM pg_locks WHERE NOT granted"
            )
            if ungranted.scalar():
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the count never waited on the lock")
