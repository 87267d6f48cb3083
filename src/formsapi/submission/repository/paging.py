"""A form's submissions a page at a time, newest first, with exact totals:
shallow pages from the rows, deep ones found by walking the daily, then the
hourly counts."""

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Text,
    bindparam,
    cast,
    func,
    select,
)
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.db.hot import HotStatement
from formsapi.models import Form, Submission, SubmissionCount, SubmissionDayCount
from formsapi.models.base import iso_utc
from formsapi.submission.repository.counts import DAY, HOUR, day_of, hour_of
from formsapi.tenancy import scoped

# From here on the next hour or day would not exist; no submission is that late.
LAST_DAY = datetime(9999, 12, 31, tzinfo=UTC)
SEEK_CHUNK = 1000  # days, or a day's hours, read per step of a seek

# id, form_id, form_version, submitted_at as API text, answers as JSON text, total.
PageRow = Sequence[Any]


def _of_form(since: bool) -> list[ColumnElement[bool]]:
    conditions = [
        scoped(Submission, bindparam("organization_id")),
        Submission.form_id == bindparam("form_id"),
    ]
    if since:
        conditions.append(Submission.submitted_at > bindparam("since"))
    return conditions


def _counts_of_form(
    table: type[SubmissionCount] | type[SubmissionDayCount] = SubmissionCount,
) -> list[ColumnElement[bool]]:
    return [
        scoped(table, bindparam("organization_id")),
        table.form_id == bindparam("form_id"),
    ]


def _total(since: bool) -> ColumnElement[int]:
    """The exact total, never a count over the whole form."""
    if not since:
        # The form's counter, kept exact with every write.
        return (
            select(Form.response_count)
            .where(
                scoped(Form, bindparam("organization_id")),
                Form.id == bindparam("form_id"),
            )
            .scalar_subquery()
        )
    # The rows of the partial hour that `since` falls in, then the whole hours
    # up to the next midnight, then whole days: at most 23 hours and one count
    # a day, where hours alone were 24 a day.
    partial_hour = (
        select(func.count())
        .select_from(Submission)
        .where(*_of_form(since=True), Submission.submitted_at < bindparam("next_hour"))
        .scalar_subquery()
    )
    whole_hours = (
        select(func.coalesce(func.sum(SubmissionCount.count), 0))
        .where(
            *_counts_of_form(),
            SubmissionCount.hour >= bindparam("next_hour"),
            SubmissionCount.hour < bindparam("next_day"),
        )
        .scalar_subquery()
    )
    whole_days = (
        select(func.coalesce(func.sum(SubmissionDayCount.count), 0))
        .where(
            *_counts_of_form(SubmissionDayCount), SubmissionDayCount.day >= bindparam("next_day")
        )
        .scalar_subquery()
    )
    return partial_hour + whole_hours + whole_days


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
        if since >= LAST_DAY:
            parameters["next_hour"] = parameters["next_day"] = LAST_DAY
        else:
            parameters["next_hour"] = hour_of(since) + HOUR
            parameters["next_day"] = day_of(since) + DAY
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
def _seek_statement(daily: bool, lower: bool, below: bool) -> HotStatement:
    """Among the newest `chunk` days (or hours), the first whose running count
    passes `offset`; if none does, the chunk's oldest, to go on from.

    The inner LIMIT makes the database walk the primary key backwards and
    stop: a window over every hour of the form made it sort them all (16 ms
    for two years of hours)."""
    table = SubmissionDayCount if daily else SubmissionCount
    start = SubmissionDayCount.day if daily else SubmissionCount.hour
    conditions = _counts_of_form(table)
    if lower:
        conditions.append(start >= bindparam("lower"))
    if below:
        conditions.append(start < bindparam("below"))
    newest = (
        select(start.label("start"), table.count)
        .where(*conditions)
        .order_by(start.desc())
        .limit(bindparam("chunk"))
        .subquery("newest")
    )
    newest_first = newest.c.start.desc()
    running = select(
        newest.c.start,
        newest.c.count,
        func.sum(newest.c.count).over(order_by=newest_first).label("through"),
        func.row_number().over(order_by=newest_first).label("position"),
        func.count().over().label("spans"),
    ).subquery("running")
    passes = running.c.through > bindparam("offset", type_=BigInteger)
    # One pass: the passing span, or else the chunk's last (oldest) one.
    return HotStatement(
        select(
            running.c.start,
            (running.c.through - running.c.count).label("newer"),
            running.c.through,
            running.c.spans,
            passes.label("passes"),
        )
        .where(passes | (running.c.position == running.c.spans))
        .order_by(passes.desc(), running.c.start.desc())
        .limit(1)
    )


async def _walk(
    session: AsyncSession,
    form: dict[str, object],
    daily: bool,
    lower: datetime | None,
    below: datetime | None,
    offset: int,
) -> tuple[datetime, int] | None:
    """The day (or hour) from `lower` and before `below` that holds row
    `offset`, newest first, and how many rows are newer than it; None when the
    offset is past them all. A chunk at a time, the next chunk sized by the
    density seen so far."""
    skipped, chunk = 0, SEEK_CHUNK
    while True:
        step = form | {"offset": offset - skipped, "chunk": chunk}
        if lower is not None:
            step["lower"] = lower
        if below is not None:
            step["below"] = below
        statement = _seek_statement(daily, lower is not None, below is not None)
        found = await statement.all(session, step)
        if not found:
            return None
        start, newer, through, spans, passes = found[0]
        if passes:
            return start, skipped + int(newer)
        if spans < chunk:
            return None  # every one counted and the offset is past them all
        skipped += int(through)
        below = start
        per_span = max(1.0, through / spans)
        chunk = min(50_000, max(SEEK_CHUNK, int((offset - skipped) / per_span * 1.25) + 1))


async def seek(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    since: datetime | None,
    offset: int,
) -> tuple[datetime, int] | None:
    """Where row `offset` (newest first) lies: the end of its hour, and how many
    rows are newer than that hour. None when the offset is past the last row.

    Walks the daily counts to the day that holds the row, then that day's
    hours, instead of the rows: page 1,000 costs about what page 1 does. With
    `since`, its day and hour count whole; the page query then drops their
    rows at or before it, which are the oldest of both."""
    form: dict[str, object] = {"organization_id": organization_id, "form_id": form_id}
    day = await _walk(session, form, True, day_of(since) if since else None, None, offset)
    if day is None:
        return None
    start, newer_days = day
    lower = start if since is None else max(start, hour_of(since))
    hour = await _walk(session, form, False, lower, start + DAY, offset - newer_days)
    if hour is None:
        return None  # what the day held past the offset was at or before `since`
    start, newer_hours = hour
    return start + HOUR, newer_days + newer_hours
