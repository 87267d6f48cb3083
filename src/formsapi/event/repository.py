"""The SQL of the events log: written with each change (and a row of the
outbox webhook workers fan out from), read in position order by the events
list, purged by age."""

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Insert,
    Row,
    Table,
    Text,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
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


def ctes() -> list[Any]:
    """PostgreSQL: the event and its outbox row as WITH clauses, to ride
    along another statement (a submission's insert) in its round trip."""
    event = _insert().returning(Event.seq).cte("ev")
    outbox = insert(_OUTBOX).from_select(["seq"], select(event.c.seq)).cte("ob")
    return [event, outbox]


@cache
def statements(postgres: bool) -> tuple[Any, ...]:
    """What writes one event and its outbox row, in one statement: on
    PostgreSQL a CTE, on SQLite the event alone (a trigger, migration 0012,
    writes its outbox row)."""
    if postgres:
        event = _insert().returning(Event.seq).cte("ev")
        return (insert(_OUTBOX).from_select(["seq"], select(event.c.seq)).add_cte(event),)
    return (_insert(),)


async def insert_one(session: AsyncSession, parameters: dict[str, Any]) -> None:
    for statement in statements(session.get_bind().dialect.name == "postgresql"):
        await session.execute(statement, parameters)


def settled(session: AsyncSession) -> ColumnElement[bool]:
    """Events no transaction still running can come before: on PostgreSQL,
    those of transactions older than the oldest one running (the snapshot's
    xmin); on SQLite, whose writers take turns, every committed one."""
    if session.get_bind().dialect.name != "postgresql":
        return literal(True)
    xmin = cast(cast(func.pg_snapshot_xmin(func.pg_current_snapshot()), Text), BigInteger)
    return Event.xid < xmin


def _after(position: Position) -> ColumnElement[bool]:
    return tuple_(Event.xid, Event.seq) > tuple_(
        literal(position[0], BigInteger), literal(position[1], BigInteger)
    )


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
    subject_id: str | None,
    types: Sequence[str],
) -> None:
    """Remove `answers` from the data of the form's events of these types
    (one submission's, or all of them) and mark them `"redacted": true`."""
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
    if subject_id is not None:
        statement = statement.where(Event.subject_id == subject_id)
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
