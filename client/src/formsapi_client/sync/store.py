"""The copy: one table per form, a table of forms, their columns, and each
form's position in its change feed, in SQLite or PostgreSQL.

A page of the feed is applied in one transaction with the position it
leads to, so a copy killed at any moment resumes exactly where its last
commit left it: nothing lost, nothing applied twice."""

import hashlib
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from psycopg.errors import UniqueViolation
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Date,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.type_api import TypeEngine

from formsapi_client._core import shown_url
from formsapi_client.errors import UnreadableResponse
from formsapi_client.models import FormDetail
from formsapi_client.sync.columns import META, Question, identifier, questions, table_name

if sys.platform != "win32":
    import fcntl

SQL_TYPES: dict[str, TypeEngine[Any]] = {
    "text": Text(),
    "integer": BigInteger(),
    "number": Float(53),  # double precision
    "date": Date(),
}

# One run at a time per database (below): a PostgreSQL advisory lock's key
# ("formsapi" in ASCII), and how long a run waits for one just killed to let go.
LOCK_KEY = 0x666F726D73617069
LOCK_WAIT = 2.0

metadata = MetaData()
forms_table = Table(
    "formsapi_forms",
    metadata,
    Column("form_id", String(64), primary_key=True),
    Column("table_name", String(63), nullable=False, unique=True),
    Column("title", Text, nullable=False),
    Column("slug", Text, nullable=False),
    Column("status", String(20), nullable=False),
    Column("version", Integer, nullable=False),
    Column("deleted_at", DateTime(timezone=True)),
    Column("synced_at", DateTime(timezone=True), nullable=False),
)
columns_table = Table(
    "formsapi_columns",
    metadata,
    Column("form_id", String(64), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("column_name", String(63), nullable=False),
    Column("type", String(10), nullable=False),
)
state_table = Table(
    "formsapi_sync_state",
    metadata,
    Column("form_id", String(64), primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("copied", Boolean, nullable=False),  # the first copy reached the end once
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def engine_for(url: str) -> Engine:
    """An engine for `sqlite:///path` or `postgresql://...` (psycopg 3)."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ValueError("--to takes a sqlite:/// or postgresql:// URL")
    engine = create_engine(parsed)
    if engine.dialect.name == "sqlite":
        _transactional_sqlite(engine)
    return engine


def _transactional_sqlite(engine: Engine) -> None:
    """pysqlite opens its transactions itself, and not before DDL: begin
    them here instead, so a new column commits with the rows that need it
    (SQLAlchemy's documented recipe). WAL lets a dashboard read meanwhile."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")  # a killed process loses nothing
        dbapi_connection.execute("PRAGMA cache_size=-65536")  # 64 MiB: a big first copy's index
        # A page rewritten by many commits goes to the file once per 64 MiB of log.
        dbapi_connection.execute("PRAGMA wal_autocheckpoint=16384")

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN")


@dataclass
class FormTable:
    """A form's table as this copy has it: the question key of each column."""

    form_id: str
    table: Table
    columns: dict[str, tuple[str, str]]  # key -> (column name, type)
    upsert: str = field(default="", repr=False)
    # The first copy has not reached the end of the feed yet: a page's
    # submissions are new to the table unless one changed while it ran.
    first: bool = False


# Every answer is a string or a number (README, "Question blocks").
ANSWER_TYPES = frozenset({str, int, float, type(None)})
# A time as the API writes it (ISO 8601 with an offset): what both targets parse.
MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True, slots=True)
class Page:
    """A page of the change feed as JSON (`Submissions.changes_json`): a
    submission as the API shows it, or a tombstone with `"deleted": true`.
    Plain dicts: building models for a bulk copy cost more than the copy."""

    data: list[dict[str, Any]]
    next: int
    has_more: bool

    @classmethod
    def read(cls, found: Any) -> "Page":
        """The page in `found`, checked for every field the copy uses, so
        that a wrong answer is one clear error and not a half-read page."""
        try:
            page = cls(found["data"], found["next"], found["hasMore"])
            readable = (
                type(page.next) is int
                and type(page.has_more) is bool
                and type(page.data) is list
                and all(map(_readable, page.data))
            )
        except (KeyError, TypeError):
            readable = False
        if not readable:
            raise UnreadableResponse("the server's answer is not a page of the change feed")
        return page


def _readable(change: Any) -> bool:
    if type(change) is not dict or type(change.get("id")) is not str:
        return False
    if change.get("deleted") is True:
        return True
    answers = change.get("answers")
    return (
        type(answers) is dict
        and ANSWER_TYPES.issuperset(map(type, answers.values()))
        and type(change.get("formVersion")) is int
        and _moment(change.get("submittedAt"))
        and _moment(change.get("updatedAt"))
    )


def _moment(value: Any) -> bool:
    if type(value) is not str:
        return False
    # The API's own form at a glance (the pattern alone doubled a page's check).
    return (len(value) == 24 and value[10] == "T" and value[-1] == "Z") or bool(
        MOMENT.fullmatch(value)
    )


@dataclass
class Applied:
    upserted: int
    deleted: int
    position: int


class TargetBusy(Exception):
    """Another run is writing to this database."""


class Store:
    def __init__(self, url: str) -> None:
        self.where = shown_url(url)
        self.engine = engine_for(url)
        self.postgres = self.engine.dialect.name == "postgresql"
        self._holder: Connection | None = None  # PostgreSQL: the lock's session
        self._lock_file: int | None = None  # SQLite: the lock file, held
        try:
            self._lock()
            with self.engine.begin() as connection:
                metadata.create_all(connection)
        except BaseException:
            self.close()
            raise
        self.tables: dict[str, FormTable] = {}

    def close(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            holder.close()
        self.engine.dispose()
        lock_file, self._lock_file = self._lock_file, None
        if lock_file is not None:
            os.close(lock_file)

    def _lock(self) -> None:
        """Hold the database for this run until close(). A second run (an
        overlapping cron job, say) would write pages the first has passed,
        and race it making tables. A killed run's lock goes with its process:
        PostgreSQL ends its session, the kernel closes its file."""
        deadline = time.monotonic() + LOCK_WAIT
        while not self._try_lock():
            if time.monotonic() > deadline:
                raise TargetBusy(f"Another formsapi-sync is writing to {self.where}.")
            time.sleep(0.1)

    def _try_lock(self) -> bool:
        if self.postgres:
            if self._holder is None:
                self._holder = self.engine.connect()
                # A host that dies with the lock: its session ends in about a
                # minute, not at the default two hours of TCP keepalive.
                self._holder.exec_driver_sql(
                    "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; "
                    "SET tcp_keepalives_count = 3"
                )
            try_lock = text("SELECT pg_try_advisory_lock(:key)")
            locked = bool(self._holder.scalar(try_lock, {"key": LOCK_KEY}))
            self._holder.commit()  # the lock is the session's: no transaction left open
            return locked
        path = self.engine.url.database
        if sys.platform == "win32" or not path or path == ":memory:":
            return True  # Windows: no lock (README)
        # A file of its own: a lock on the database file itself could meet
        # SQLite's own locks (BSD and macOS keep both kinds in one table).
        lock_path = f"{path}.formsapi-sync.lock"
        try:
            if self._lock_file is None:
                self._lock_file = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as error:
            raise ValueError(f"cannot lock {lock_path}: {error.strerror}") from None
        return True

    def check_lock(self) -> None:
        """Between passes of a long watch: the PostgreSQL session holding the
        lock may have been ended (a restart, an idle timeout, a dropped
        connection), and with it the lock; another run may hold it now. The
        lock lives exactly as long as its session, so a live session holds it."""
        if self._holder is None:
            return
        try:
            self._holder.exec_driver_sql("SELECT 1")
            self._holder.commit()
        except DBAPIError:
            raise TargetBusy(f"This run lost its hold on {self.where}.") from None

    # What the copy holds.

    def position(self, form_id: str) -> int:
        with self.engine.connect() as connection:
            found = connection.scalar(
                select(state_table.c.position).where(state_table.c.form_id == form_id)
            )
        return int(found or 0)

    def positions(self) -> dict[str, int]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(state_table.c.form_id, state_table.c.position))
            return {form_id: int(position) for form_id, position in rows}

    def known_forms(self) -> list[str]:
        """The forms this copy holds that are not marked deleted."""
        with self.engine.connect() as connection:
            return list(
                connection.scalars(
                    select(forms_table.c.form_id).where(forms_table.c.deleted_at.is_(None))
                )
            )

    def unknown_keys(self, form_id: str, page: Page) -> set[str]:
        """Answer keys in the page that the form's table has no column for."""
        answered = set().union(*[c["answers"] for c in page.data if not c.get("deleted")])
        return answered - self.tables[form_id].columns.keys()

    def known_table(self, form_id: str) -> tuple[str, str] | None:
        """The table and title of a form this copy holds."""
        with self.engine.connect() as connection:
            row = connection.execute(
                select(forms_table.c.table_name, forms_table.c.title).where(
                    forms_table.c.form_id == form_id
                )
            ).first()
        return (row[0], row[1]) if row else None

    def count(self, form_id: str) -> int:
        table = self.tables[form_id].table
        with self.engine.connect() as connection:
            return int(connection.scalar(select(func.count()).select_from(table)) or 0)

    # Making room for a form.

    def prepare(self, form: FormDetail) -> FormTable:
        """The form's table, made or widened for the questions of `form`
        (a later version's new questions become new columns; none is ever
        dropped), with the form's row in formsapi_forms."""
        now = datetime.now(UTC)
        described = {
            "title": form.title,
            "slug": form.slug,
            "status": form.status,
            "version": form.version,
            "deleted_at": None,
        }
        with self.engine.begin() as connection:
            row = connection.execute(
                select(
                    forms_table.c.table_name, *(forms_table.c[name] for name in described)
                ).where(forms_table.c.form_id == form.id)
            ).first()
            if row is None:
                taken = set(connection.scalars(select(forms_table.c.table_name)))
                taken |= set(inspect(connection).get_table_names())
                known = table_name(form.slug, taken)
                connection.execute(
                    forms_table.insert().values(
                        form_id=form.id, table_name=known, **described, synced_at=now
                    )
                )
                connection.execute(
                    state_table.insert().values(
                        form_id=form.id, position=0, copied=False, updated_at=now
                    )
                )
            else:
                known = row[0]
                if tuple(row[1:]) != tuple(described.values()):  # else a run would write
                    connection.execute(
                        update(forms_table)
                        .where(forms_table.c.form_id == form.id)
                        .values(**described, synced_at=now)
                    )
            found = self._widen(connection, form.id, known, questions(form))
            copied = connection.scalar(
                select(state_table.c.copied).where(state_table.c.form_id == form.id)
            )
        found.first = not copied
        return found

    def widen(self, form_id: str, found: Sequence[Question]) -> FormTable:
        """Columns for those questions (of an older or newer version of the
        form) that the table lacks; nothing else changes."""
        with self.engine.begin() as connection:
            known = self.tables[form_id].table.name
            return self._widen(connection, form_id, known, found)

    def _widen(
        self, connection: Connection, form_id: str, name: str, found: Sequence[Question]
    ) -> FormTable:
        columns = self._columns(connection, form_id)
        added, retyped = self._add_questions(connection, form_id, columns, found)
        table = self._table(name, columns)
        if not inspect(connection).has_table(name):
            table.create(connection)
        else:
            for key in added:
                self._add_column(connection, name, *columns[key])
            if retyped:
                self._retype(connection, name, columns, retyped)
        previous = self.tables.get(form_id)
        form_table = FormTable(
            form_id,
            table,
            columns,
            self._upsert(table),
            previous.first if previous else False,
        )
        self.tables[form_id] = form_table
        return form_table

    def _columns(self, connection: Connection, form_id: str) -> dict[str, tuple[str, str]]:
        rows = connection.execute(
            select(columns_table.c.key, columns_table.c.column_name, columns_table.c.type).where(
                columns_table.c.form_id == form_id
            )
        )
        return {key: (name, type_) for key, name, type_ in rows}

    def _add_questions(
        self,
        connection: Connection,
        form_id: str,
        columns: dict[str, tuple[str, str]],
        found: Sequence[Question],
    ) -> tuple[list[str], list[str]]:
        """Record a column for each new question, and a wider type for one
        whose question changed type; the keys added, and those retyped."""
        added, retyped = [], []
        taken = set(META) | {name for name, _ in columns.values()}
        for question in found:
            if question.key not in columns:
                name = identifier(question.key, taken)
                taken.add(name)
                columns[question.key] = (name, question.type)
                connection.execute(
                    columns_table.insert().values(
                        form_id=form_id, key=question.key, column_name=name, type=question.type
                    )
                )
                added.append(question.key)
            elif columns[question.key][1] != question.type:
                name, old = columns[question.key]
                wider = "number" if {old, question.type} == {"integer", "number"} else "text"
                if wider != old:
                    columns[question.key] = (name, wider)
                    connection.execute(
                        update(columns_table)
                        .where(
                            columns_table.c.form_id == form_id, columns_table.c.key == question.key
                        )
                        .values(type=wider)
                    )
                    retyped.append(question.key)
        return added, retyped

    def _retype(
        self,
        connection: Connection,
        name: str,
        columns: dict[str, tuple[str, str]],
        keys: list[str],
    ) -> None:
        """Give the columns of `keys` their wider types, keeping their values.
        SQLite cannot change a column's type: the table is made again with
        it, its rows copied across (SQLite's documented way)."""
        if self.postgres:
            for key in keys:
                column, type_ = columns[key]
                sql_type = SQL_TYPES[type_].compile(dialect=connection.dialect)
                connection.exec_driver_sql(
                    f'ALTER TABLE "{name}" ALTER COLUMN "{column}" TYPE {sql_type} '
                    f'USING "{column}"::{sql_type}'
                )
            return
        again = self._table("formsapi_retyping", columns)
        again.create(connection)
        quoted = ", ".join(f'"{column.name}"' for column in again.columns)
        connection.exec_driver_sql(
            f'INSERT INTO "{again.name}" ({quoted}) SELECT {quoted} FROM "{name}"'  # noqa: S608
        )
        connection.exec_driver_sql(f'DROP TABLE "{name}"')
        connection.exec_driver_sql(f'ALTER TABLE "{again.name}" RENAME TO "{name}"')

    def _add_column(self, connection: Connection, table: str, name: str, type_: str) -> None:
        sql_type = SQL_TYPES[type_].compile(dialect=connection.dialect)
        connection.execute(text(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {sql_type}'))

    def _table(self, name: str, columns: dict[str, tuple[str, str]]) -> Table:
        return Table(
            name,
            MetaData(),
            Column("submission_id", String(64), primary_key=True),
            Column("submitted_at", DateTime(timezone=True), nullable=False),
            Column("updated_at", DateTime(timezone=True), nullable=False),
            Column("form_version", Integer, nullable=False),
            *(Column(column, SQL_TYPES[type_]) for column, type_ in columns.values()),
        )

    def _upsert(self, table: Table) -> str:
        """The statement a page's rows go in with, for the driver itself:
        SQLAlchemy's per-row parameter processing cost more than the
        database's own work (see bench/RESULTS.md)."""
        names = [column.name for column in table.columns]
        mark = "%s" if self.postgres else "?"
        quoted = ", ".join(f'"{name}"' for name in names)
        assign = ", ".join(f'"{name}" = excluded."{name}"' for name in names[1:])
        values = ", ".join([mark] * len(names))
        # Every name is ours, made by columns.identifier: nothing to inject.
        insert = f'INSERT INTO "{table.name}" ({quoted}) VALUES ({values})'  # noqa: S608
        return f'{insert} ON CONFLICT ("submission_id") DO UPDATE SET {assign}'

    # Changing it.

    def apply(self, form_id: str, pages: Sequence[Page]) -> Applied:
        """The pages' creates, edits and deletes, and the position the last
        one leads to, in one transaction."""
        found = self.tables[form_id]
        moment = _postgres_moment if self.postgres else _sqlite_moment
        keys = list(found.columns)
        # Answers go in as the API gives them (a text column keeps a number as
        # its digits, in both databases); PostgreSQL's dates are checked, so
        # that a bad one is NULL rather than a refused page.
        types = [type_ for _, type_ in found.columns.values()]
        dates = [len(META) + i for i, t in enumerate(types) if t == "date"] if self.postgres else []
        rows, gone = [], []
        # A submission changed again is listed again, further on: the later
        # change is the one to keep.
        latest = {change["id"]: change for page in pages for change in page.data}
        for change in latest.values():
            if change.get("deleted"):
                gone.append(change["id"])
                continue
            row = (
                change["id"],
                moment(change["submittedAt"]),
                moment(change["updatedAt"]),
                change["formVersion"],
                *map(change["answers"].get, keys),
            )
            rows.append(_postgres_dates(row, dates) if dates else row)
        with self.engine.begin() as connection:
            if rows and self.postgres:
                self._copy_in(connection, found, rows)
            elif rows:
                connection.exec_driver_sql(found.upsert, rows)
            if gone:
                connection.execute(delete(found.table).where(found.table.c.submission_id.in_(gone)))
            last = pages[-1]
            self._set_position(connection, form_id, last.next, copied=not last.has_more)
        found.first = found.first and last.has_more
        return Applied(len(rows), len(gone), last.next)

    def _copy_in(
        self, connection: Connection, found: FormTable, rows: list[tuple[Any, ...]]
    ) -> None:
        """PostgreSQL: the rows COPYed into the table, in a first copy, or else
        into a temporary table (emptied at commit) and upserted from it in one
        statement: both much faster than psycopg's executemany, a statement a
        row (bench/RESULTS.md)."""
        names = [column.name for column in found.table.columns]
        quoted = ", ".join(f'"{name}"' for name in names)
        if found.first:
            try:
                with connection.begin_nested():
                    self._copy(connection, found.table.name, quoted, rows)
                return
            except UniqueViolation:
                pass  # a submission changed while the first copy ran: listed again
        # Named by the table and its columns' types: a temporary table lives
        # on with its pooled connection, and must change when they do.
        shape = repr([found.table.name, *sorted(found.columns.values())])
        staging = f"load_{hashlib.sha256(shape.encode()).hexdigest()[:24]}"
        assign = ", ".join(f'"{name}" = excluded."{name}"' for name in names[1:])
        connection.exec_driver_sql(
            f'CREATE TEMPORARY TABLE IF NOT EXISTS "{staging}" '
            f'(LIKE "{found.table.name}") ON COMMIT DELETE ROWS'
        )
        self._copy(connection, staging, quoted, rows)
        connection.exec_driver_sql(
            f'INSERT INTO "{found.table.name}" ({quoted}) SELECT {quoted} FROM "{staging}" '  # noqa: S608
            f'ON CONFLICT ("submission_id") DO UPDATE SET {assign}'
        )

    @staticmethod
    def _copy(connection: Connection, table: str, quoted: str, rows: list[tuple[Any, ...]]) -> None:
        raw: Any = connection.connection.dbapi_connection  # psycopg's own, for COPY
        with raw.cursor() as cursor, cursor.copy(f'COPY "{table}" ({quoted}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)

    def restart(self, form_id: str) -> None:
        """Empty the form's table and start its copy again from the
        beginning, in one transaction (its feed cannot continue)."""
        found = self.tables[form_id]
        with self.engine.begin() as connection:
            connection.execute(delete(found.table))
            connection.execute(
                update(state_table)
                .where(state_table.c.form_id == form_id)
                .values(position=0, copied=False, updated_at=datetime.now(UTC))
            )
        found.first = True

    def mark_deleted(self, form_id: str) -> bool:
        """The form is gone from the server: say so, and keep its last copy.
        False if the copy already said so."""
        with self.engine.begin() as connection:
            marked = connection.execute(
                update(forms_table)
                .where(forms_table.c.form_id == form_id, forms_table.c.deleted_at.is_(None))
                .values(deleted_at=datetime.now(UTC))
            )
        return bool(marked.rowcount)

    def _set_position(
        self, connection: Connection, form_id: str, position: int, *, copied: bool
    ) -> None:
        values: dict[str, Any] = {"position": position, "updated_at": datetime.now(UTC)}
        if copied:
            values["copied"] = True
        connection.execute(
            update(state_table).where(state_table.c.form_id == form_id).values(**values)
        )


def _postgres_moment(text: str) -> str:
    """An API time as it is: COPY's text format takes ISO 8601, and parsing
    it here only to format it again cost a third of the copy's own time."""
    return text


def _sqlite_moment(text: str) -> str:
    """An API time ('2026-05-27T22:51:39.859Z') as SQLAlchemy keeps a
    DateTime in SQLite ('2026-05-27 22:51:39.859000', UTC), so that it and
    the copy's other readers read it back."""
    if len(text) == 24 and text[-1] == "Z":  # the API's form: the quick way
        return f"{text[:10]} {text[11:23]}000"
    moment = datetime.fromisoformat(text).astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(" ", "microseconds")


def _postgres_dates(row: tuple[Any, ...], dates: list[int]) -> tuple[Any, ...]:
    checked = list(row)
    for i in dates:
        try:
            checked[i] = date.fromisoformat(row[i]).isoformat()
        except (TypeError, ValueError):
            checked[i] = None
    return tuple(checked)
