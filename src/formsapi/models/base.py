"""Declarative base, constraint naming convention and portable column types."""

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, MetaData, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONColumn = JSON().with_variant(JSONB(), "postgresql")
# The same for a column where None means "not set": stored as SQL NULL, not as
# the JSON value null (JSON's default), so `IS NULL` and COALESCE see it.
NullableJSONColumn = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out, on engines with and without time zones."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        # SQLite stores text; a fixed naive UTC form keeps text comparison == time comparison.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class iso_utc(FunctionElement[str]):
    """A UTC timestamp column as the API prints it, `2026-11-21T14:17:19.123Z`,
    formatted by the database: in the page loop, formatting 50 datetimes in
    Python cost more than the rest of building the body."""

    type = Text()
    inherit_cache = True


@compiles(iso_utc)
def _iso_utc_default(element: iso_utc, compiler: SQLCompiler, **kw: Any) -> str:
    # Engines above have their own; this one renders a statement as text (logs, tests).
    return f"iso_utc({compiler.process(element.clauses, **kw)})"


@compiles(iso_utc, "postgresql")
def _iso_utc_postgresql(element: iso_utc, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.clauses, **kw)
    return f"to_char(({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"


@compiles(iso_utc, "sqlite")
def _iso_utc_sqlite(element: iso_utc, compiler: SQLCompiler, **kw: Any) -> str:
    # SQLite holds the naive UTC text UTCDateTime writes; %f is SS.SSS.
    return f"strftime('%Y-%m-%dT%H:%M:%fZ', {compiler.process(element.clauses, **kw)})"


class byte_length(FunctionElement[int]):
    """The length of a text in bytes, without counting its characters."""

    type = Integer()
    inherit_cache = True


@compiles(byte_length)
def _byte_length_default(element: byte_length, compiler: SQLCompiler, **kw: Any) -> str:
    return f"octet_length({compiler.process(element.clauses, **kw)})"


@compiles(byte_length, "sqlite")
def _byte_length_sqlite(element: byte_length, compiler: SQLCompiler, **kw: Any) -> str:
    # octet_length() arrived in SQLite 3.43; a blob's length is its size.
    return f"length(CAST({compiler.process(element.clauses, **kw)} AS BLOB))"


class days_after(FunctionElement[datetime]):
    """A UTCDateTime column moved by a whole number of days (a bound
    parameter), in the column's own stored form."""

    type = UTCDateTime()
    inherit_cache = True


@compiles(days_after)
def _days_after_default(element: days_after, compiler: SQLCompiler, **kw: Any) -> str:
    # PostgreSQL's, as the other engine's below is SQLite's.
    column, days = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"({column} + make_interval(days => {days}))"


@compiles(days_after, "sqlite")
def _days_after_sqlite(element: days_after, compiler: SQLCompiler, **kw: Any) -> str:
    # The text UTCDateTime writes, 'YYYY-MM-DD HH:MM:SS.ffffff': the date and
    # time moved by SQLite, the microseconds carried over as they were.
    column, days = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"(strftime('%Y-%m-%d %H:%M:%S', {column}, ({days}) || ' days') || substr({column}, 20))"
