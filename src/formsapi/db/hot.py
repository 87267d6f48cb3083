"""Hot statements: a read's busiest statements run on a pooled connection
borrowed for themselves, compiled once per dialect."""

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import CompoundSelect, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.util import greenlet_spawn

from formsapi.db.engine import is_autocommit
from formsapi.db.errors import DISCONNECTS, ConnectionDropped, DatabaseUnreachable, unreachable

Processor = Callable[[Any], Any]


@dataclass(frozen=True)
class _DriverSql:
    """A HotStatement as one dialect's driver runs it."""

    sql: str
    names: tuple[str, ...]  # the positional parameters' names, in order
    literals: dict[str, Any]
    binds: dict[str, Processor]  # per parameter, the type's conversion to the driver
    results: tuple[Processor | None, ...] | None  # per column, None if no column has one


class HotStatement:
    """A Core statement for the busiest reads, compiled once and run on the
    driver's connection itself (asyncpg, aiosqlite).

    SQLAlchemy's execution layer (parameter and result processing, row objects)
    cost more CPU than the page query it ran, and on SQLite its session a
    thread hop per step (bench/RESULTS.md). What it did for these statements
    is done here: the parameters and the columns go through their types'
    processing (none on PostgreSQL, whose driver takes and gives Python
    types; SQLite stores times as text) and the rows are read by position."""

    def __init__(self, statement: Select[*tuple[Any, ...]] | CompoundSelect[Any]) -> None:
        self.statement = statement
        self._compiled: dict[str, _DriverSql] = {}

    def _for(self, dialect: Dialect) -> _DriverSql:
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self.statement.compile(dialect=dialect)
            names = tuple(compiled.positiontup or ())
            # Literals the statement carries (coalesce's 0) are parameters too;
            # a bind left without a value must be passed, not sent as NULL.
            literals = {k: v for k, v in compiled.params.items() if v is not None}
            binds: dict[str, Processor] = {}
            results: tuple[Processor | None, ...] | None = None
            if dialect.name != "postgresql":
                for name in names:
                    bind = compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
                    if bind is not None:
                        binds[name] = bind
                results = tuple(
                    column.type.dialect_impl(dialect).result_processor(dialect, None)
                    for column in self.statement.selected_columns
                )
                if not any(results):
                    results = None
            found = _DriverSql(compiled.string, names, literals, binds, results)
            self._compiled[dialect.name] = found
        return found

    def driver_sql(
        self, dialect: Dialect, parameters: Mapping[str, object]
    ) -> tuple[str, list[object]]:
        """The SQL text and positional values the driver runs."""
        driver = self._for(dialect)
        values = driver.literals | dict(parameters)
        for name, bind in driver.binds.items():
            values[name] = bind(values[name])
        return driver.sql, [values[name] for name in driver.names]

    async def all(
        self, session: AsyncSession, parameters: Mapping[str, object]
    ) -> Sequence[Sequence[Any]]:
        """The rows, read through `session`.

        A read session (autocommit) with no connection of its own yet borrows
        one from the pool for this statement alone: the session's transaction
        and connection bookkeeping cost more than the fetch itself
        (bench/RESULTS.md)."""
        engine = session.bind
        if not isinstance(engine, AsyncEngine):
            raise TypeError("HotStatement needs a session bound to an engine")
        if session.in_transaction() or not is_autocommit(engine):
            # A session with a transaction of its own: SQLAlchemy's ordinary
            # execution, inside that transaction.
            connection = await session.connection()
            return (await connection.execute(self.statement, parameters)).all()
        sql, values = self.driver_sql(engine.dialect, parameters)
        if engine.dialect.name != "postgresql":
            return await self._sqlite(engine, sql, values)
        try:
            return await _fetch_pooled(engine, sql, values)
        except ConnectionDropped:
            # A restart closed the pool's connections. An autocommit read has
            # nothing to lose: again, through SQLAlchemy's ordinary execution,
            # which on meeting another dropped connection has the pool replace
            # every connection opened before it, at once.
            return await self._ordinary(engine, parameters)

    async def _sqlite(self, engine: AsyncEngine, sql: str, values: list[object]) -> list[Any]:
        # The pool's SQLite connections run in autocommit (_sqlite_pragmas):
        # the read is the statement alone, in one trip to aiosqlite's thread.
        pooled = await engine.raw_connection()
        driver = pooled.driver_connection
        assert driver is not None
        try:
            rows: list[Any] = list(await driver.execute_fetchall(sql, values))
        except sqlite3.Error as error:
            # As SQLAlchemy's execution raises it: the handlers know that (a
            # lock held past the busy timeout answers 503).
            raise DBAPIError.instance(sql, values, error, sqlite3.Error) from None
        finally:
            await greenlet_spawn(pooled.close)
        results = self._for(engine.dialect).results
        if results is None:
            return rows
        return [
            tuple(
                value if convert is None else convert(value)
                for convert, value in zip(results, row, strict=True)
            )
            for row in rows
        ]

    async def _ordinary(
        self, engine: AsyncEngine, parameters: Mapping[str, object]
    ) -> Sequence[Sequence[Any]]:
        for attempt in range(2):
            try:
                async with engine.connect() as connection:
                    return (await connection.execute(self.statement, parameters)).all()
            except DBAPIError as error:
                if attempt or not error.connection_invalidated:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises


async def _fetch_pooled(engine: AsyncEngine, sql: str, values: list[object]) -> list[Any]:
    try:
        pooled = await engine.raw_connection()
    except Exception as error:
        if unreachable(error):
            raise DatabaseUnreachable(str(error)) from error
        raise
    driver = pooled.driver_connection
    assert driver is not None
    try:
        rows: list[Any] = await driver.fetch(sql, *values)
    except asyncio.CancelledError:
        # Cut short before the database answered: the connection's state is
        # unknown, so the pool drops it, as SQLAlchemy's own execution does.
        await greenlet_spawn(pooled.invalidate)
        raise
    except Exception as error:
        if _closed(driver, error):
            await greenlet_spawn(pooled.invalidate, error)
            raise ConnectionDropped(str(error)) from error
        raise
    finally:
        await greenlet_spawn(pooled.close)
    return rows


def _closed(driver: Any, error: Exception) -> bool:
    # The driver reports a connection closed under it in several ways, some as
    # a protocol state error (InternalClientError) rather than a disconnect;
    # other errors (bad data) leave the connection open and usable.
    return isinstance(error, DISCONNECTS) or driver.is_closed()
