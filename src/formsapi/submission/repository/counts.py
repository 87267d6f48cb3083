"""The hourly and daily counts of each form's submissions, kept exact in the
same transaction as the rows they count."""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Row,
    Text,
    bindparam,
    cast,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Form, Submission, SubmissionCount, SubmissionDayCount
from formsapi.tenancy import scoped

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


async def rebuild_counts(session: AsyncSession, organization_id: str) -> None:
    """Recompute an organization's hourly and daily counts and form counters
    from its rows: for bulk loaders that write rows directly."""
    hour: ColumnElement[datetime]
    day: ColumnElement[datetime]
    if session.get_bind().dialect.name == "postgresql":
        # The three-argument form: UTC hours and days whatever the server's zone.
        hour = func.date_trunc("hour", Submission.submitted_at, "UTC")
        day = func.date_trunc("day", SubmissionCount.hour, "UTC")
    else:
        # SQLite stores 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as the column writes it.
        hour = func.strftime("%Y-%m-%d %H:00:00.000000", Submission.submitted_at)
        day = func.strftime("%Y-%m-%d 00:00:00.000000", SubmissionCount.hour)
    for table in (SubmissionCount, SubmissionDayCount):
        await session.execute(delete(table).where(scoped(table, organization_id)))
    hours = (
        select(Submission.organization_id, Submission.form_id, hour, func.count())
        .where(scoped(Submission, organization_id))
        .group_by(Submission.organization_id, Submission.form_id, hour)
    )
    await session.execute(
        insert(SubmissionCount).from_select(["organization_id", "form_id", "hour", "count"], hours)
    )
    days = (
        select(
            SubmissionCount.organization_id,
            SubmissionCount.form_id,
            day,
            func.sum(SubmissionCount.count),
        )
        .where(scoped(SubmissionCount, organization_id))
        .group_by(SubmissionCount.organization_id, SubmissionCount.form_id, day)
    )
    await session.execute(
        insert(SubmissionDayCount).from_select(["organization_id", "form_id", "day", "count"], days)
    )
    counted = (
        select(func.count())
        .where(scoped(Submission, organization_id), Submission.form_id == Form.id)
        .scalar_subquery()
    )
    await session.execute(
        update(Form).where(scoped(Form, organization_id)).values(response_count=counted)
    )


@cache
def counting_statements(postgres: bool) -> tuple[Any, ...]:
    """What a write runs to add :count at :hour and :day to a form's counts.
    Built once: building and keying these per post cost more CPU than
    running them. On PostgreSQL one statement (the day's in a WITH clause)."""
    upsert = postgresql.insert if postgres else sqlite.insert
    statements = []
    for table, column in ((SubmissionCount, "hour"), (SubmissionDayCount, "day")):
        statement = upsert(table).values(
            organization_id=bindparam("organization_id"),
            form_id=bindparam("form_id"),
            count=bindparam("count"),
            **{column: bindparam(column)},
        )
        statements.append(
            statement.on_conflict_do_update(
                index_elements=["organization_id", "form_id", column],
                set_={"count": table.count + statement.excluded.count},
            )
        )
    if postgres:
        hours, days = statements
        return (hours.add_cte(days.cte("days")),)
    return tuple(statements)


def _on_postgres(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "postgresql"


async def add_counts(
    session: AsyncSession, organization_id: str, form_id: str, hours: Mapping[datetime, int]
) -> None:
    """Add (or, negative, remove) submissions to the hourly and daily counts,
    in the caller's transaction: the counts move with the rows they count."""
    if not hours:
        return
    parameters = [
        {"organization_id": organization_id, "form_id": form_id}
        | {"hour": hour, "day": day_of(hour), "count": n}
        for hour, n in hours.items()
    ]
    connection = await session.connection()
    for statement in counting_statements(_on_postgres(session)):
        await connection.execute(statement, parameters if len(parameters) > 1 else parameters[0])


@cache
def new_row(postgres: bool) -> Insert:
    """The insert of a new submission, with its answers bound as JSON text
    already encoded (before the form's lock, not under it); run by the
    events' write with each event's parameters (event_service.write)."""
    answers = bindparam("answers", type_=Text)
    columns = ("id", "organization_id", "form_id", "form_version", "submitted_at")
    values: dict[str, Any] = {
        c: bindparam(c) for c in (*columns, "change_seq", "ending", "language")
    }
    values["answers"] = cast(answers, postgresql.JSONB) if postgres else answers
    return insert(Submission).values({**values, "version": 1})


async def hourly_counts(
    session: AsyncSession, organization_id: str, form_id: str, start: datetime
) -> Sequence[Row[datetime, int]]:
    """The form's hourly counts from `start` on: at most 24 rows a day, whatever its volume."""
    statement = select(SubmissionCount.hour, SubmissionCount.count).where(
        scoped(SubmissionCount, organization_id),
        SubmissionCount.form_id == form_id,
        SubmissionCount.hour >= start,
    )
    return (await session.execute(statement)).all()
