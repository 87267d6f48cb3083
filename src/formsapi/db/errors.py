"""What a database error means: unreachable (worth a retry), a dropped
connection, or SQLite's lock held too long."""

import socket
import sqlite3

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.exc import DBAPIError

# The driver's signs of a connection the server has closed (a restart, a
# terminated backend); any other error on a connection the driver reports
# closed counts too (see _closed).
DISCONNECTS = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.AdminShutdownError,
    ConnectionError,
)

# No connection to be had: refused, reset, timed out, a name that does not
# resolve, the server starting up, shutting down or out of connection slots.
_UNREACHABLE = (
    *DISCONNECTS,
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
