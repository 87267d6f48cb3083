"""The SQL of the events log: written with each change (and a row of the
outbox webhook workers fan out from), read in position order by the events
list, purged by age."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    Executable,
    Insert,
    Row,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Event, EventOutbox, EventPosition
from formsapi.models.base import iso_utc
from formsapi.tenancy import scoped, unscoped

Position = tuple[int, int]  # (xid, seq)

# id, type, occurred_at as the API prints it, data as JSON text, xid, seq
EventRow = Row[str, str, str, str, int, int]


@cache
def _insert() -> Insert:
    """Built once; its parameters are named so a submission's write can run
    it beside its own (event_id, event_type, occurred_at, event_data,
    organization_id, form_id, subject_id)."""
    return insert(Event).values(
        id=bindparam("event_id"),
        organization_id=bindparam("organization_id"),
        type=bindparam("event_type"),
        occurred_at=bindparam("occurred_at"),
        form_id=bindparam("form_id"),
        subject_id=bindparam("subject_id"),
        data=bindparam("event_data"),
    )


# The table, not the class: run with a submission's parameters, an ORM
# insert would take them for rows of its own.
_OUTBOX: Table = EventOutbox.__table__  # type: ignore[assignment]


@cache
def write_statements(postgres: bool, along: Insert | None) -> tuple[Executable, ...]:
    """What writes an event and its outbox row (and `along`, another insert
    run with the same parameters), built once for each `along`.

    On PostgreSQL it is one statement, the event and its outbox row in WITH
    clauses riding along the other insert: one round trip for a change. On
    SQLite, where a round trip is a call to aiosqlite's thread, they are
    separate statements, each run once for a whole batch."""
    if postgres:
        event = _insert().returning(Event.seq).cte("ev")
        outbox = insert(_OUTBOX).from_select(["seq"], select(event.c.seq))
        if along is None:
            return (outbox.add_cte(event),)
        return (along.add_cte(event, outbox.cte("ob")),)
    written = select(Event.seq).where(
        scoped(Event, bindparam("organization_id")), Event.id == bindparam("event_id")
    )
    outbox = insert(_OUTBOX).from_select(["seq"], written)
    return (*(() if along is None else (along,)), _insert(), outbox)


def written_from(rows: Select[Any]) -> tuple[CTE, CTE]:
    """(PostgreSQL) The events `rows` selects, numbered in its order, and
    their outbox rows, as WITH clauses of a statement that writes a batch of
    changes in one round trip. `rows`' columns, in order: event_id,
    organization_id, event_type, occurred_at, form_id, subject_id,
    event_data."""
    columns = ["id", "organization_id", "type", "occurred_at", "form_id", "subject_id", "data"]
    events = insert(Event).from_select(columns, rows, include_defaults=False)
    written = events.returning(Event.seq).cte("ev")
    outbox = insert(_OUTBOX).from_select(["seq"], select(written.c.seq), include_defaults=False)
    return written, outbox.cte("ob")


async def write(
    session: AsyncSession, rows: Sequence[Mapping[str, Any]], along: Insert | None = None
) -> None:
    """Write events, one for each parameter set in `rows` (event_id,
    event_type, occurred_at, event_data, organization_id, form_id,
    subject_id), each with its outbox row and, with `along`, its row of
    another table, in the caller's transaction. `along` must be built once
    (it keys the statements built for it)."""
    connection = await session.connection()
    postgres = session.get_bind().dialect.name == "postgresql"
    parameters = list(rows) if len(rows) > 1 else rows[0]
    for statement in write_statements(postgres, along):
        await connection.execute(statement, parameters)


# The oldest transaction still running in this database, or the snapshot's
# xmax if none is: the snapshot's running xids, less those pg_stat_activity
# shows in another database (a backend writes only to its own, so another
# database's long transaction, a bulk load or a report, cannot hold our
# events back). An xid missing from pg_stat_activity, ended since the
# snapshot or on a backend it does not show, is kept: the horizon errs early.
# backend_xid is 32 bits, the snapshot's xid8 64: running xids are never
# 2^31 apart, so their low 32 bits tell them apart.
HORIZON = """(
SELECT coalesce(min(running.xid), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
FROM (SELECT xip::text::bigint AS xid FROM pg_snapshot_xip(pg_current_snapshot()) AS xip)
    AS running
WHERE running.xid % 4294967296 NOT IN (
    SELECT backend_xid::text::bigint FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL
    AND datid <> (SELECT oid FROM pg_database WHERE datname = current_database())))"""


def settled(session: AsyncSession) -> ColumnElement[bool]:
    """Events no transaction still running can come before: on PostgreSQL,
    those of transactions older than the oldest one running in this
    database; on SQLite, whose writers take turns, every committed one."""
    if session.get_bind().dialect.name != "postgresql":
        return literal(True)
    return Event.xid < literal_column(HORIZON, BigInteger)


def _after(position: Position) -> ColumnElement[bool]:
    xid, seq = position
    return tuple_(Event.xid, Event.seq) > tuple_(literal(xid, BigInteger), literal(seq, BigInteger))


async def position_of(
    session: AsyncSession, organization_id: str, event_id: str
) -> Position | None:
    statement = select(Event.xid, Event.seq).where(
        scoped(Event, organization_id), Event.id == event_id
    )
    found = (await session.execute(statement)).first()
    return None if found is None else (found[0], found[1])


async def scan_bound(
    session: AsyncSession, organization_id: str, after: Position, rows: int
) -> tuple[Position, str] | None:
    """The position and id of the event `rows` settled events past `after`:
    how far one call looks for events its filters match. None if fewer remain."""
    statement = (
        select(Event.xid, Event.seq, Event.id)
        .where(scoped(Event, organization_id), _after(after), settled(session))
        .order_by(Event.xid, Event.seq)
        .offset(rows - 1)
        .limit(1)
    )
    found = (await session.execute(statement)).first()
    return None if found is None else ((found[0], found[1]), found[2])


async def page(
    session: AsyncSession,
    organization_id: str,
    after: Position,
    limit: int,
    *,
    upto: Position | None = None,
    types: Sequence[str] = (),
    form_id: str | None = None,
) -> Sequence[EventRow]:
    """Settled events of the organization past `after` (and up to `upto`),
    in position order."""
    statement = select(
        Event.id, Event.type, iso_utc(Event.occurred_at), Event.data, Event.xid, Event.seq
    ).where(scoped(Event, organization_id), _after(after), settled(session))
    if upto is not None:
        statement = statement.where(
            tuple_(Event.xid, Event.seq)
            <= tuple_(literal(upto[0], BigInteger), literal(upto[1], BigInteger))
        )
    if types:
        statement = statement.where(Event.type.in_(types))
    if form_id is not None:
        statement = statement.where(Event.form_id == form_id)
    statement = statement.order_by(Event.xid, Event.seq).limit(limit)
    return (await session.execute(statement)).all()


async def redact_answers(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    subject_ids: Sequence[str] | None,
    types: Sequence[str],
) -> None:
    """Remove `answers` from the data of the form's events of these types
    (these submissions', or all of them) and mark them `"redacted": true`."""
    data: ColumnElement[str]
    if session.get_bind().dialect.name == "postgresql":
        data = cast(
            cast(Event.data, postgresql.JSONB)
            .op("-")("answers")
            .op("||")(cast(literal('{"redacted": true}'), postgresql.JSONB)),
            Text,
        )
    else:
        data = func.json_set(
            func.json_remove(Event.data, "$.answers"), "$.redacted", func.json("true")
        )
    statement = update(Event).where(
        scoped(Event, organization_id), Event.form_id == form_id, Event.type.in_(types)
    )
    if subject_ids is not None:
        statement = statement.where(Event.subject_id.in_(subject_ids))
    await session.execute(statement.values(data=data).execution_options(synchronize_session=False))


async def purged_position(session: AsyncSession) -> Position:
    found = (
        await session.execute(select(EventPosition.purged_xid, EventPosition.purged_seq))
    ).first()
    return (0, 0) if found is None else (found[0], found[1])


async def ensure_positions(session: AsyncSession) -> None:
    """The one row of event_positions, there whatever emptied the table."""
    upsert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    await session.execute(
        upsert(EventPosition)
        .values(id=1, purged_xid=0, purged_seq=0)
        .on_conflict_do_nothing(index_elements=["id"])
    )


async def purge(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` events older than `before`, of every
    organization, and move the purged position past them; how many went."""
    oldest = unscoped(
        select(Event.seq, Event.xid)
        .where(Event.occurred_at < before)
        .order_by(Event.occurred_at)
        .limit(batch),
        "the retention sweep covers every organization",
    )
    found = (await session.execute(oldest)).all()
    if not found:
        return 0
    last = max((xid, seq) for seq, xid in found)
    await ensure_positions(session)
    await session.execute(
        update(EventPosition)
        .where(tuple_(EventPosition.purged_xid, EventPosition.purged_seq) < tuple_(*last))
        .values(purged_xid=last[0], purged_seq=last[1])
    )
    seqs = [seq for seq, _ in found]
    await session.execute(
        unscoped(
            delete(Event).where(Event.seq.in_(seqs)),
            "the retention sweep covers every organization",
        )
    )
    # Not fanned out in all that time (no worker ran): never will be.
    await session.execute(delete(EventOutbox).where(EventOutbox.seq.in_(seqs)))
    return len(found)
