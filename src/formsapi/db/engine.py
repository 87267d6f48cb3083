"""Engines for SQLite and PostgreSQL: drivers, SQLite's pragmas, files
and write gate, JSON columns in C, and autocommit for reads."""

import asyncio
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, event
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.util import await_only

from formsapi.kit.write_gate import GateTimeout, WriteGate

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


# SQLite's connections are in the driver's autocommit from the start
# (_sqlite_pragmas): a read differs from a write only in that no BEGIN
# IMMEDIATE is sent for it (_sqlite_begin), which this option says.
# SQLAlchemy's isolation_level="AUTOCOMMIT" would also set the driver's level
# as each read checks a connection out and put it back at check-in, five
# calls into aiosqlite's thread around every read session (bench/RESULTS.md).
_READS_ONLY = "formsapi_reads_only"


def autocommit(engine: AsyncEngine) -> AsyncEngine:
    """`engine` with each statement in autocommit, never in a transaction."""
    if is_autocommit(engine):
        return engine
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{_READS_ONLY: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _reads_only(options: Mapping[str, Any]) -> bool:
    return bool(options.get(_READS_ONLY)) or options.get("isolation_level") == "AUTOCOMMIT"


def is_autocommit(engine: AsyncEngine) -> bool:
    return _reads_only(engine.get_execution_options())
