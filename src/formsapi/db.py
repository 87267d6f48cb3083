"""Engines for SQLite and PostgreSQL, the request session, and migrations.

The session a writing request (or command) gets is committed once, at its
boundary; services and repositories never commit. Reading requests get an
autocommit session, and their busiest statements borrow a pooled connection
for themselves (HotStatement).
"""

import asyncio
import logging
import os
import socket
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg  # type: ignore[import-untyped]
import orjson
from sqlalchemy import CompoundSelect, Connection, Select, event
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.util import await_only, greenlet_spawn

from formsapi.kit.write_gate import GateTimeout, WriteGate

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

log = logging.getLogger("formsapi")


def async_url(url: str) -> str:
    """Accept plain sqlite:// and postgresql:// URLs and pick the async driver."""
    parsed = make_url(url)
    driver = {
        "sqlite": "sqlite+aiosqlite",
        "postgresql": "postgresql+asyncpg",
        "postgres": "postgresql+asyncpg",
    }.get(parsed.drivername)
    if driver is not None:
        parsed = parsed.set(drivername=driver)
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ValueError(f"unsupported database URL scheme: {parsed.drivername}")
    return parsed.render_as_string(hide_password=False)


async def dispose(engine: AsyncEngine) -> None:
    """Close the engine's connections, and wait for aiosqlite's worker threads
    to finish: after a failed connect, aiosqlite hands its cleanup to its
    thread without waiting for it, and a thread answering a loop that has
    since closed prints a traceback (omnilib/aiosqlite#241)."""
    await engine.dispose()
    if engine.dialect.name == "sqlite":
        # Only threads started since the engine was made: another engine's
        # open connections keep theirs (a process running commands in
        # threads, as the tests do, would wait on them).
        older = _WORKERS_BEFORE.pop(engine.sync_engine, set())
        for thread in _sqlite_workers() - older:
            await asyncio.to_thread(thread.join, 5)


def _sqlite_workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.endswith("(_connection_worker_thread)")}


# Per SQLite engine: aiosqlite's worker threads alive when it was made.
_WORKERS_BEFORE: weakref.WeakKeyDictionary[Any, set[threading.Thread]] = weakref.WeakKeyDictionary()


def _sqlite_pragmas(busy_timeout: float) -> Callable[[Any, ConnectionPoolEntry], None]:
    def on_connect(dbapi_connection: Any, _: ConnectionPoolEntry) -> None:
        # The driver's own transaction handling breaks SAVEPOINT (SQLAlchemy's
        # documented recipe): switch it off and let _sqlite_begin emit BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # WAL lets readers run beside the writer; foreign keys are off by default in SQLite.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # A write waits this long for the write lock, then answers 503 busy.
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cursor.close()

    return on_connect


# The database's files are its owner's alone (0600), as its key file is.
# SQLite creates a missing database with the umask's mode (0644, most often),
# and its -wal and -shm files with the database's mode: so the database file
# is made first, empty (which SQLite reads as an empty database), with 0600.
# The files an older version made are tightened once SQLite has opened them
# as a database (a directory or another file at the path is SQLite's to
# refuse, and left as it is). Neither step opens an existing database file:
# closing a descriptor of it would drop the locks SQLite's connections in this
# process hold on it.


def _sqlite_create_private(_: Dialect, __: ConnectionPoolEntry, cargs: Any, cparams: Any) -> None:
    # Before SQLite opens the file (`cargs` are what the driver is called with).
    # A SQLite URI (uri=true) is SQLite's to resolve.
    filename = cargs[0] if cargs else ":memory:"
    if filename == ":memory:" or cparams.get("uri"):
        return
    # One connection at a time: another must not open the new file before
    # our descriptor of it is closed.
    with _CREATING:
        try:
            descriptor = os.open(filename, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return  # there already, or no place for it: SQLite opens it or says why not
        os.close(descriptor)


_CREATING = threading.Lock()


def _sqlite_tighten(dbapi_connection: Any, _: ConnectionPoolEntry) -> None:
    # After the pragmas, which a file that is not a database fails.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA database_list")
    main = next(row[2] for row in cursor.fetchall() if row[1] == "main")
    cursor.close()
    if main:  # "" in memory
        _tighten(Path(main))


def _tighten(database: Path) -> None:
    """Take the group's and others' permissions off the database, its WAL and
    its shared-memory file, with one line in the log if there were any."""
    tightened = []
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        try:
            mode = path.stat().st_mode & 0o777
            if mode & 0o077:
                path.chmod(mode & 0o700)
                tightened.append(f"{path} ({mode:o} to {mode & 0o700:o})")
        except FileNotFoundError:
            continue
        except OSError as error:
            log.warning("could not make %s private to its owner: %s", path, error)
    if tightened:
        log.warning("made the database's files private to their owner: %s", ", ".join(tightened))


def _sqlite_begin(connection: Connection) -> None:
    # Reads run in autocommit and need no transaction. Writes take the write
    # lock up front (IMMEDIATE): a concurrent writer then waits its turn
    # (busy_timeout) instead of failing to upgrade a read lock mid-transaction.
    if not _reads_only(connection.get_execution_options()):
        connection.exec_driver_sql("BEGIN IMMEDIATE")


class _Gated:
    """SQLite transactions that take their turn at the write gate first
    (kit/write_gate.py) and leave it once their COMMIT or ROLLBACK is done,
    or their connection is given up."""

    def __init__(self, gate: WriteGate) -> None:
        self.gate = gate

    def begin(self, connection: Connection) -> None:
        if _reads_only(connection.get_execution_options()):
            return
        try:
            await_only(self.gate.enter())
        except GateTimeout:
            # As SQLite's own "locked" reaches us: answered 503 busy.
            locked = sqlite3.OperationalError("database is locked (at the write gate)")
            raise OperationalError("BEGIN IMMEDIATE", None, locked) from None
        connection.info[_GATED] = True
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            self._leave(connection.info)
            raise

    def commit(self, connection: Connection) -> None:
        # The COMMIT is run here, so the gate is left only after it; the
        # driver's own commit then finds no transaction and does nothing.
        if not connection.invalidated and connection.info.get(_GATED):
            try:
                connection.exec_driver_sql("COMMIT")
            finally:
                self._leave(connection.info)

    def rollback(self, connection: Connection) -> None:
        # An invalidated connection's turn was given back with it (given_up).
        if not connection.invalidated and connection.info.get(_GATED):
            try:
                connection.exec_driver_sql("ROLLBACK")
            except Exception:  # noqa: S110 - the driver's rollback follows and reports
                pass
            finally:
                self._leave(connection.info)

    def given_up(self, _: Any, record: ConnectionPoolEntry, *__: Any) -> None:
        self._leave(record.info)

    def _leave(self, info: dict[Any, Any]) -> None:
        if info.pop(_GATED, False):
            self.gate.leave()


_GATED = "formsapi_write_gate"


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.database in (None, "", ":memory:") or parsed.query.get("uri"):
        return None
    return Path(parsed.database)


def database_file(engine: AsyncEngine) -> Path | None:
    """The file an SQLite engine's database is in; None in memory, or on PostgreSQL."""
    if engine.dialect.name != "sqlite":
        return None
    return _sqlite_file(engine.url.render_as_string())


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


# JSON columns written and read in C: a large form's blocks took the json
# module tens of milliseconds each way, inside the transaction that holds
# the form (and on SQLite every writer) waiting. Everything stored came in
# as I-JSON, which orjson reads and writes alike.
_JSON_IN_C: dict[str, Any] = {"json_serializer": _json_text, "json_deserializer": orjson.loads}


def create_engine(url: str, pool_size: int = 10, pool_timeout: float = 10.0) -> AsyncEngine:
    """`pool_size` is how many connections the process keeps; past that a
    request waits up to `pool_timeout` seconds for one to come back rather
    than opening another: overflow connections, opened and closed under load,
    cost page-1 throughput (bench/RESULTS.md). On SQLite a write waits up to
    `pool_timeout` seconds for the write lock."""
    url = async_url(url)
    if url.startswith("sqlite"):
        database = _sqlite_file(url)
        # Its connections are threads of this process, kept as PostgreSQL's
        # are: one opened and closed per request under load (SQLAlchemy's
        # default overflow) cost a third of a summary's throughput. A
        # database in memory lives in its one connection.
        pool = (
            {"pool_size": pool_size, "max_overflow": 0, "pool_timeout": pool_timeout}
            if database is not None
            else {}
        )
        # Statements' parameters (answers, key hashes) stay out of error messages and logs.
        engine = create_async_engine(url, hide_parameters=True, **_JSON_IN_C, **pool)
        _WORKERS_BEFORE[engine.sync_engine] = _sqlite_workers()
        event.listen(engine.sync_engine, "do_connect", _sqlite_create_private)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas(pool_timeout))
        event.listen(engine.sync_engine, "connect", _sqlite_tighten)
        if database is None:
            event.listen(engine.sync_engine, "begin", _sqlite_begin)
            return engine
        gated = _Gated(WriteGate(database, pool_timeout))
        event.listen(engine.sync_engine, "begin", gated.begin)
        event.listen(engine.sync_engine, "commit", gated.commit)
        event.listen(engine.sync_engine, "rollback", gated.rollback)
        for given_up in ("checkin", "invalidate", "soft_invalidate", "close"):
            event.listen(engine.sync_engine.pool, given_up, gated.given_up)
        return engine
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=pool_timeout,
        pool_pre_ping=False,
        hide_parameters=True,
        **_JSON_IN_C,
        # Prepared statements keep one plan. Left to choose, PostgreSQL planned the
        # `since` page afresh on every execution (its generic plan's estimate lost
        # to the custom one's), at a cost bench/RESULTS.md records. Every statement
        # here is an indexed lookup or range whose plan does not depend on the
        # values bound, but a summary's count of a form's rows, which has the
        # form's ids written into its SQL instead (summary.repository.tallies).
        connect_args={"server_settings": {"plan_cache_mode": "force_generic_plan"}},
    )


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


# SQLite's connections are in the driver's autocommit from the start
# (_sqlite_pragmas): a read differs from a write only in that no BEGIN
# IMMEDIATE is sent for it (_sqlite_begin), which this option says.
# SQLAlchemy's isolation_level="AUTOCOMMIT" would also set the driver's level
# as each read checks a connection out and put it back at check-in, five
# calls into aiosqlite's thread around every read session (bench/RESULTS.md).
_READS_ONLY = "formsapi_reads_only"


def autocommit(engine: AsyncEngine) -> AsyncEngine:
    """`engine` with each statement in autocommit, never in a transaction."""
    if _is_autocommit(engine):
        return engine
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{_READS_ONLY: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _reads_only(options: Mapping[str, Any]) -> bool:
    return bool(options.get(_READS_ONLY)) or options.get("isolation_level") == "AUTOCOMMIT"


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


def _alembic_config(url: str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    return config


class SchemaNotCurrent(Exception):
    """The database's schema is not the one this version of formsapi runs on."""


def _revisions(connection: Connection) -> set[str]:
    from alembic.migration import MigrationContext

    return set(MigrationContext.configure(connection).get_current_heads())


async def check_schema(engine: AsyncEngine) -> None:
    """Refuse a database whose schema is behind (or ahead of) this version:
    management commands never migrate one behind the operator's back."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    async with engine.connect() as connection:
        current = await connection.run_sync(_revisions)
    heads = set(script.get_heads())
    if current == heads:
        return
    if not current:
        raise SchemaNotCurrent("the database has no schema yet: run `formsapi migrate` first")
    if all(_known(script, revision) for revision in current):
        raise SchemaNotCurrent(
            "the database schema is behind this version of formsapi: run `formsapi migrate`"
        )
    raise SchemaNotCurrent(
        "the database schema is newer than this version of formsapi: upgrade formsapi"
    )


def _known(script: Any, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # alembic: an unknown revision raises its own resolution error
        return False


def migrate(url: str, revision: str = "head") -> set[str]:
    """Bring the database to `revision`, creating the SQLite file if needed;
    the revisions it was at before (none for a new database)."""
    from alembic import command

    parsed = make_url(async_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    before = asyncio.run(_current_revisions(url))
    command.upgrade(_alembic_config(url), revision)
    return before


async def _current_revisions(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_revisions)
    finally:
        await engine.dispose()


# The driver's signs of a connection the server has closed (a restart, a
# terminated backend); any other error on a connection the driver reports
# closed counts too (see _closed).
_DISCONNECTS = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.AdminShutdownError,
    ConnectionError,
)

# No connection to be had: refused, reset, timed out, a name that does not
# resolve, the server starting up, shutting down or out of connection slots.
_UNREACHABLE = (
    *_DISCONNECTS,
    TimeoutError,
    socket.gaierror,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.TooManyConnectionsError,
)


class DatabaseUnreachable(ConnectionError):
    """No connection to the database could be had for a statement."""


class ConnectionDropped(DatabaseUnreachable):
    """The server closed the connection a statement ran on."""


def unreachable(error: BaseException) -> bool:
    """Whether `error`, or an error it wraps, says the database cannot be
    reached right now (as opposed to a bug or bad data): worth a retry."""
    current: BaseException | None = error
    # SQLAlchemy's wrapper, then the adapted DBAPI error, then the driver's own.
    for _ in range(4):
        if current is None:
            return False
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, _UNREACHABLE):
            return True
        if type(current) is OSError and str(current).startswith("Multiple exceptions"):
            return True  # asyncio: every address of the name failed (localhost: ::1 and 127.0.0.1)
        current = current.orig if isinstance(current, DBAPIError) else current.__cause__
    return False


def locked(error: BaseException) -> bool:
    """Whether `error` is SQLite's "database is locked": another connection kept
    the write lock for the whole busy timeout."""
    cause = error.orig if isinstance(error, DBAPIError) else error
    return isinstance(cause, sqlite3.OperationalError) and "locked" in str(cause)


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
        if session.in_transaction() or not _is_autocommit(engine):
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


def _is_autocommit(engine: AsyncEngine) -> bool:
    return _reads_only(engine.get_execution_options())


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
    return isinstance(error, _DISCONNECTS) or driver.is_closed()
