from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Row,
    Text,
    bindparam,
    cast,
    delete,
    func,
    insert,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.db import HotStatement
from formsapi.models import Form, Submission, SubmissionCount
from formsapi.models.base import iso_utc

HOUR = timedelta(hours=1)
SEEK_CHUNK = 2000  # hours read per step of a seek

# id, form_id, form_version, submitted_at as API text, answers as JSON text, total.
PageRow = Sequence[Any]


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _of_form(since: bool) -> list[ColumnElement[bool]]:
    conditions = [
        Submission.organization_id == bindparam("organization_id"),
        Submission.form_id == bindparam("form_id"),
    ]
    if since:
        conditions.append(Submission.submitted_at > bindparam("since"))
    return conditions


def _counts_of_form() -> list[ColumnElement[bool]]:
    return [
        SubmissionCount.organization_id == bindparam("organization_id"),
        SubmissionCount.form_id == bindparam("form_id"),
    ]


def _total(since: bool) -> ColumnElement[int]:
    """The exact total, never a count over the whole form."""
    if not since:
        # The form's counter, kept exact with every write.
        return (
            select(Form.response_count)
            .where(
                Form.organization_id == bindparam("organization_id"),
                Form.id == bindparam("form_id"),
            )
            .scalar_subquery()
        )
    # Whole hours after `since` from the hourly counts, plus the rows of the one
    # partial hour that `since` falls in.
    whole_hours = (
        select(func.coalesce(func.sum(SubmissionCount.count), 0))
        .where(*_counts_of_form(), SubmissionCount.hour >= bindparam("next_hour"))
        .scalar_subquery()
    )
    partial_hour = (
        select(func.count())
        .select_from(Submission)
        .where(*_of_form(since=True), Submission.submitted_at < bindparam("next_hour"))
        .scalar_subquery()
    )
    return whole_hours + partial_hour


@cache
def _page_statement(since: bool, bounded: bool) -> HotStatement:
    """One of four statement shapes, built once: constructing SQLAlchemy
    statements per request cost as much as running them."""
    conditions = _of_form(since)
    if bounded:
        conditions.append(Submission.submitted_at < bindparam("before"))
    return HotStatement(
        select(
            Submission.id,
            Submission.form_id,
            Submission.form_version,
            iso_utc(Submission.submitted_at),
            # The answers as the JSON text the database holds: the API embeds it
            # as is, so they are never decoded and re-encoded.
            cast(Submission.answers, Text).label("answers_json"),
            _total(since).label("total"),
        )
        .where(*conditions)
        .order_by(Submission.submitted_at.desc(), Submission.id.desc())
        # BIGINT: a deep page times the limit passes what INTEGER holds.
        .offset(bindparam("offset", type_=BigInteger))
        .limit(bindparam("limit"))
    )


def _parameters(organization_id: str, form_id: str, since: datetime | None) -> dict[str, object]:
    parameters: dict[str, object] = {"organization_id": organization_id, "form_id": form_id}
    if since is not None:
        parameters["since"] = since
        parameters["next_hour"] = hour_of(since) + HOUR
    return parameters


async def list_page(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    since: datetime | None,
    offset: int,
    limit: int,
    before: datetime | None = None,
) -> Sequence[PageRow]:
    """One page (optionally only rows before `before`), each row carrying the
    total, which the database computes once."""
    statement = _page_statement(since is not None, before is not None)
    parameters = _parameters(organization_id, form_id, since) | {
        "offset": offset,
        "limit": limit,
    }
    if before is not None:
        parameters["before"] = before
    return await statement.all(session, parameters)


async def total(
    session: AsyncSession, organization_id: str, form_id: str, since: datetime | None
) -> int:
    connection = await session.connection()
    value = await connection.scalar(
        select(_total(since is not None)), _parameters(organization_id, form_id, since)
    )
    return int(value or 0)


@cache
def _seek_statement(since: bool, below: bool) -> HotStatement:
    """Among the newest `chunk` hours, the first whose running count passes
    `offset`; if none does, the chunk's oldest hour, to go on from.

    The inner LIMIT makes the database walk the primary key backwards and
    stop: a window over every hour of the form made it sort them all (16 ms
    for two years of hours)."""
    conditions = _counts_of_form()
    if since:
        conditions.append(SubmissionCount.hour >= bindparam("since_hour"))
    if below:
        conditions.append(SubmissionCount.hour < bindparam("below"))
    newest = (
        select(SubmissionCount.hour, SubmissionCount.count)
        .where(*conditions)
        .order_by(SubmissionCount.hour.desc())
        .limit(bindparam("chunk"))
        .subquery("newest")
    )
    newest_first = newest.c.hour.desc()
    running = select(
        newest.c.hour,
        newest.c.count,
        func.sum(newest.c.count).over(order_by=newest_first).label("through"),
        func.row_number().over(order_by=newest_first).label("position"),
        func.count().over().label("hours"),
    ).subquery("running")
    passes = running.c.through > bindparam("offset", type_=BigInteger)
    # One pass: the passing hour, or else the chunk's last (oldest) hour.
    return HotStatement(
        select(
            running.c.hour,
            (running.c.through - running.c.count).label("newer"),
            running.c.through,
            running.c.hours,
            passes.label("passes"),
        )
        .where(passes | (running.c.position == running.c.hours))
        .order_by(passes.desc(), running.c.hour.desc())
        .limit(1)
    )


async def seek(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    since: datetime | None,
    offset: int,
) -> tuple[datetime, int] | None:
    """Where row `offset` (newest first) lies: the end of its hour, and how many
    rows are newer than that hour. None when the offset is past the last row.

    Walks the hourly counts instead of the rows, so page 1,000 costs about what
    page 1 does; a chunk of hours at a time, the next chunk sized by the density
    seen so far."""
    parameters = _parameters(organization_id, form_id, since)
    if since is not None:
        parameters["since_hour"] = hour_of(since)
    skipped, below, chunk = 0, None, SEEK_CHUNK
    while True:
        step = parameters | {"offset": offset - skipped, "chunk": chunk}
        if below is not None:
            step["below"] = below
        statement = _seek_statement(since is not None, below is not None)
        found = await statement.all(session, step)
        if not found:
            return None
        hour, newer, through, hours, passes = found[0]
        if passes:
            return hour + HOUR, skipped + int(newer)
        if hours < chunk:
            return None  # every hour counted and the offset is past them all
        skipped += int(through)
        below = hour
        per_hour = max(1.0, through / hours)
        chunk = min(50_000, max(SEEK_CHUNK, int((offset - skipped) / per_hour * 1.25) + 1))


async def rebuild_counts(session: AsyncSession, organization_id: str) -> None:
    """Recompute an organization's hourly counts and form counters from its rows:
    for bulk loaders that write rows directly."""
    hour: ColumnElement[datetime]
    if session.get_bind().dialect.name == "postgresql":
        hour = func.date_trunc("hour", Submission.submitted_at)
    else:
        # SQLite stores 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as the column writes it.
        hour = func.strftime("%Y-%m-%d %H:00:00.000000", Submission.submitted_at)
    await session.execute(
        delete(SubmissionCount).where(SubmissionCount.organization_id == organization_id)
    )
    rows = (
        select(Submission.organization_id, Submission.form_id, hour, func.count())
        .where(Submission.organization_id == organization_id)
        .group_by(Submission.organization_id, Submission.form_id, hour)
    )
    await session.execute(
        insert(SubmissionCount).from_select(["organization_id", "form_id", "hour", "count"], rows)
    )
    counted = (
        select(func.count())
        .where(Submission.organization_id == organization_id, Submission.form_id == Form.id)
        .scalar_subquery()
    )
    await session.execute(
        update(Form).where(Form.organization_id == organization_id).values(response_count=counted)
    )


async def add_counts(
    session: AsyncSession, organization_id: str, form_id: str, hours: Mapping[datetime, int]
) -> None:
    """Add (or, negative, remove) submissions to the hourly counts, in the
    caller's transaction: the counts move with the rows they count."""
    if not hours:
        return
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(SubmissionCount).values(
        [
            {"organization_id": organization_id, "form_id": form_id, "hour": hour, "count": n}
            for hour, n in hours.items()
        ]
    )
    statement = statement.on_conflict_do_update(
        index_elements=["organization_id", "form_id", "hour"],
        set_={"count": SubmissionCount.count + statement.excluded.count},
    )
    await session.execute(statement)


async def get(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> Submission | None:
    return await session.scalar(
        select(Submission).where(
            Submission.organization_id == organization_id,
            Submission.form_id == form_id,
            Submission.id == submission_id,
        )
    )


async def delete_row(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> datetime | None:
    """Delete one submission; its time, or None if there was none to delete."""
    deleted = await session.execute(
        delete(Submission)
        .where(
            Submission.organization_id == organization_id,
            Submission.form_id == form_id,
            Submission.id == submission_id,
        )
        .returning(Submission.submitted_at)
    )
    return deleted.scalar_one_or_none()


async def recent(
    session: AsyncSession, organization_id: str, form_id: str, limit: int
) -> Sequence[Submission]:
    statement = (
        select(Submission)
        .where(Submission.organization_id == organization_id, Submission.form_id == form_id)
        .order_by(Submission.submitted_at.desc(), Submission.id.desc())
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def hourly_counts(
    session: AsyncSession, organization_id: str, form_id: str, start: datetime
) -> Sequence[Row[datetime, int]]:
    """The form's hourly counts from `start` on: at most 24 rows a day, whatever its volume."""
    statement = select(SubmissionCount.hour, SubmissionCount.count).where(
        SubmissionCount.organization_id == organization_id,
        SubmissionCount.form_id == form_id,
        SubmissionCount.hour >= start,
    )
    return (await session.execute(statement)).all()


ExportRow = Row[str, int, datetime, dict[str, object]]


async def export_chunk(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    after: tuple[datetime, str] | None,
    limit: int,
) -> Sequence[ExportRow]:
    """The next `limit` submissions, newest first, after the (time, id) of the
    last one read: a seek on the page index, equally fast at any depth."""
    statement = select(
        Submission.id, Submission.form_version, Submission.submitted_at, Submission.answers
    ).where(Submission.organization_id == organization_id, Submission.form_id == form_id)
    if after is not None:
        statement = statement.where(
            tuple_(Submission.submitted_at, Submission.id) < tuple_(after[0], after[1])
        )
    statement = statement.order_by(Submission.submitted_at.desc(), Submission.id.desc()).limit(
        limit
    )
    return (await session.execute(statement)).all()
