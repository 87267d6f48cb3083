"""The SQL of the change feed: a form's submissions and tombstones by change
number, edits, deletes, and the purge of old tombstones."""

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    CompoundSelect,
    Integer,
    Row,
    Select,
    SQLColumnExpression,
    String,
    Text,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    null,
    select,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter

from formsapi.db.hot import HotStatement
from formsapi.models import Form, Submission, SubmissionTombstone
from formsapi.models.base import byte_length, iso_utc
from formsapi.tenancy import scoped, unscoped

# id, form_version, submitted_at, updated_at, version, change_seq, answers as
# JSON text, ending, language, deleted_at, and whether the read's byte bound
# dropped rows after it (_more: a number, 0 or NULL when none): the API's text
# for times (submitted_at a datetime when asked); deleted_at NULL for a live
# submission, the middle ones NULL for a tombstone.
ChangeRow = Sequence[Any]
# Where a reader that takes one field of a ChangeRow finds it.
ROW_ID, ROW_CHANGE_SEQ = 0, 5

# About this many bytes of answers at most in one read, past the first row: a
# page of 1,000 submissions of a megabyte each would otherwise be read whole
# into memory.
PAGE_BYTES = 4 * 1024 * 1024


def _live(upto: bool, times: bool = False) -> Any:
    conditions = [
        scoped(Submission, bindparam("organization_id")),
        Submission.form_id == bindparam("form_id"),
        Submission.change_seq > bindparam("after", type_=BigInteger),
    ]
    if upto:
        conditions.append(Submission.change_seq <= bindparam("upto", type_=BigInteger))
    return select(
        Submission.id,
        Submission.form_version,
        (Submission.submitted_at if times else iso_utc(Submission.submitted_at)).label(
            "submitted_at"
        ),
        iso_utc(func.coalesce(Submission.updated_at, Submission.submitted_at)).label("updated_at"),
        Submission.version,
        Submission.change_seq,
        # As the database holds it: embedded as is, never decoded and re-encoded.
        cast(Submission.answers, Text).label("answers"),
        Submission.ending,
        Submission.language,
        cast(null(), Text).label("deleted_at"),
    ).where(*conditions)


@cache
def _feed_statement(times: bool = False, narrow: bool = False) -> HotStatement:
    """Live submissions and tombstones after a number, merged in number order;
    with `times`, each submission's time as a datetime; `narrow`, bounded as
    SQLite reads it fastest (_narrowly_bounded).

    Each side is ordered and limited on its own, so each reads at most a
    page from its index: with the limit outside alone, PostgreSQL's generic
    plan read every later row of the form and sorted them."""
    live = _live(upto=False, times=times)
    dead = select(
        SubmissionTombstone.submission_id.label("id"),
        cast(null(), Integer).label("form_version"),
        cast(null(), Submission.submitted_at.type if times else Text).label("submitted_at"),
        cast(null(), Text).label("updated_at"),
        cast(null(), Integer).label("version"),
        SubmissionTombstone.change_seq,
        cast(null(), Text).label("answers"),
        cast(null(), String).label("ending"),
        cast(null(), String).label("language"),
        iso_utc(SubmissionTombstone.deleted_at).label("deleted_at"),
    ).where(
        scoped(SubmissionTombstone, bindparam("organization_id")),
        SubmissionTombstone.form_id == bindparam("form_id"),
        SubmissionTombstone.change_seq > bindparam("after", type_=BigInteger),
    )
    if narrow:
        return HotStatement(
            _narrowly_bounded(
                (live, Submission.change_seq, _size(cast(Submission.answers, Text))),
                (dead, SubmissionTombstone.change_seq, literal(0)),
            )
        )
    limit: BindParameter[int] = bindparam("limit")
    sides = (
        live.order_by(Submission.change_seq).limit(limit),
        dead.order_by(SubmissionTombstone.change_seq).limit(limit),
    )
    merged = union_all(*(side.subquery().select() for side in sides)).subquery("changes")
    return HotStatement(_bounded(select(merged).order_by(merged.c.change_seq).limit(limit)))


def _size(answers: Any) -> ColumnElement[int]:
    """The bytes of answers' text, 0 for none (a tombstone's)."""
    return func.coalesce(byte_length(answers), 0)


def _bounded(ordered: Select[Any]) -> Select[Any]:
    """`ordered`'s rows (by change number, limited) while the answers before
    each stay under PAGE_BYTES, each with the number of the row after it:
    the database measures and drops the rest, so they never reach us, and
    the last row kept tells whether any were dropped. A running sum and a
    look one row ahead stream; a count of the rows would hold them all
    first."""
    rows = ordered.subquery("rows")
    size = _size(rows.c.answers)
    order = rows.c.change_seq
    running = func.sum(size).over(order_by=order, rows=(None, 0))
    sized = select(
        rows,
        (running - size).label("before"),
        # The frame of the sum (lead ignores frames): one window, one pass.
        func.lead(order).over(order_by=order, rows=(None, 0)).label("after_it"),
    ).subquery("sized")
    columns = [sized.c[column.name] for column in rows.c]
    return (
        select(*columns, sized.c.after_it)
        .where(sized.c.before < PAGE_BYTES)
        .order_by(sized.c.change_seq)
    )


def _narrowly_bounded(
    *sides: tuple[Select[Any], SQLColumnExpression[int], ColumnElement[int]],
    upto: ColumnElement[bool] | None = None,
) -> Select[Any] | CompoundSelect[Any]:
    """_bounded as SQLite runs it fastest: the running sum over each row's
    number and size alone (sorted, but narrow, and held once: `sized` is
    read by four subqueries), then the wide rows up to the last number it
    keeps, read in their index's order and merged, never sorted. Summed over
    the wide rows, as _bounded does, SQLite copies each page's answers twice
    (for the sum and for the union), and a form's feed reads slower
    (bench/RESULTS.md). PostgreSQL reads fastest as _bounded has it: sizing
    the rows apart converts each row's answers to text twice.

    Each side is (its rows' select, their change number, their size); the
    narrow and the wide read of a side are both made from its select, so
    both keep its organization filter. `upto`, a last number to read, bounds
    the narrow rows alone: with it on the wide rows too, SQLite ranged their
    index by it and not by the sum's last number, reading every row up to
    `upto`. The last column counts the rows the bound dropped (_more)."""
    limit: BindParameter[int] = bindparam("limit")
    numbered = [
        (rows if upto is None else rows.where(upto))
        .with_only_columns(number.label("change_seq"), size.label("size"))
        .order_by(number)
        .limit(limit)
        .subquery()
        .select()
        for rows, number, size in sides
    ]
    if len(numbered) > 1:
        merged = union_all(*numbered).subquery("narrow")
        first = select(merged).order_by(merged.c.change_seq).limit(limit).subquery("first")
    else:
        first = numbered[0].subquery("first")
    running = func.sum(first.c.size).over(order_by=first.c.change_seq, rows=(None, 0))
    sized = select(first.c.change_seq, (running - first.c.size).label("before")).cte("sized")
    last = select(func.max(sized.c.change_seq)).where(sized.c.before < PAGE_BYTES)
    dropped = select(func.count()).select_from(sized).where(sized.c.before >= PAGE_BYTES)
    bounded = [
        rows.add_columns(dropped.scalar_subquery().label("dropped")).where(
            number <= last.scalar_subquery()
        )
        for rows, number, _ in sides
    ]
    if len(bounded) == 1:
        return bounded[0].order_by(sides[0][1])
    return union_all(*bounded).order_by("change_seq")


def _more(rows: Sequence[ChangeRow], limit: int) -> tuple[Sequence[ChangeRow], bool]:
    """At most `limit` rows, and whether more follow: a row past the limit
    came, or the byte bound dropped rows after the last one."""
    if len(rows) > limit:
        return rows[:limit], True
    return rows, bool(rows and rows[-1][-1])


async def changes_after(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    after: int,
    limit: int,
    *,
    times: bool = False,
) -> tuple[Sequence[ChangeRow], bool]:
    """Up to `limit` changes after `after` in number order (fewer when their
    answers are large), and whether more follow. With `times`, a
    submission's time is a datetime, to the microsecond (the API's text has
    milliseconds)."""
    parameters = {
        "organization_id": organization_id,
        "form_id": form_id,
        "after": after,
        "limit": limit + 1,
    }
    return _more(await _feed_statement(times, _narrow(session)).all(session, parameters), limit)


def _narrow(session: AsyncSession) -> bool:
    """Whether to bound as SQLite reads fastest (_narrowly_bounded): on
    every engine but PostgreSQL."""
    return session.get_bind().dialect.name != "postgresql"


@cache
def _export_statement(narrow: bool) -> HotStatement:
    if narrow:
        return HotStatement(
            _narrowly_bounded(
                (_live(upto=False), Submission.change_seq, _size(cast(Submission.answers, Text))),
                upto=Submission.change_seq <= bindparam("upto", type_=BigInteger),
            )
        )
    limit: BindParameter[int] = bindparam("limit")
    return HotStatement(_bounded(_live(upto=True).order_by(Submission.change_seq).limit(limit)))


async def live_between(
    session: AsyncSession, organization_id: str, form_id: str, after: int, upto: int, limit: int
) -> tuple[Sequence[ChangeRow], bool]:
    """Live submissions numbered after `after` and up to `upto`, in number
    order, and whether more follow."""
    parameters = {
        "organization_id": organization_id,
        "form_id": form_id,
        "after": after,
        "upto": upto,
        "limit": limit + 1,
    }
    return _more(await _export_statement(_narrow(session)).all(session, parameters), limit)


async def positions(
    session: AsyncSession, organization_id: str, form_id: str
) -> Row[int, int] | None:
    """The form's latest change number and its tombstone horizon; None if no such form."""
    statement = select(Form.change_seq, Form.tombstone_horizon).where(
        scoped(Form, organization_id), Form.id == form_id
    )
    return (await session.execute(statement)).first()


async def edit(
    session: AsyncSession,
    submission: Submission,
    answers: dict[str, Any],
    change_seq: int,
    now: datetime,
) -> None:
    """Write an edit to a submission loaded in `session`: new answers, one
    more version, the change's number. The caller holds the form's row lock,
    so the version read is the version replaced."""
    submission.answers = answers
    submission.version += 1
    submission.updated_at = now
    submission.change_seq = change_seq
    await session.flush()


async def bury(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    numbered: Sequence[tuple[str, int]],
    now: datetime,
) -> None:
    """Record deletes for the feed: each submission's id and its delete's
    change number, no answers."""
    await session.execute(
        insert(SubmissionTombstone),
        [
            {
                "organization_id": organization_id,
                "form_id": form_id,
                "submission_id": submission_id,
                "change_seq": change_seq,
                "deleted_at": now,
            }
            for submission_id, change_seq in numbered
        ],
    )


async def purge_tombstones(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` tombstones older than `before`, of every
    organization, raising each form's horizon past the ones it lost; how many
    went. Raised in the same transaction, so a reader that finds a tombstone
    gone also finds the horizon that says so."""
    oldest = unscoped(
        select(
            SubmissionTombstone.organization_id,
            SubmissionTombstone.form_id,
            SubmissionTombstone.change_seq,
        )
        .where(SubmissionTombstone.deleted_at < before)
        .order_by(SubmissionTombstone.deleted_at)
        .limit(batch),
        "the retention sweep covers every organization",
    )
    found = (await session.execute(oldest)).all()
    horizons: dict[tuple[str, str], int] = {}
    for organization_id, form_id, change_seq in found:
        key = (organization_id, form_id)
        horizons[key] = max(horizons.get(key, 0), change_seq)
    for (organization_id, form_id), horizon in sorted(horizons.items()):
        await session.execute(
            update(Form)
            .where(scoped(Form, organization_id), Form.id == form_id)
            .values(
                tombstone_horizon=case(
                    (Form.tombstone_horizon > horizon, Form.tombstone_horizon), else_=horizon
                )
            )
        )
        await session.execute(
            delete(SubmissionTombstone).where(
                scoped(SubmissionTombstone, organization_id),
                SubmissionTombstone.form_id == form_id,
                SubmissionTombstone.change_seq <= horizon,
                SubmissionTombstone.deleted_at < before,
            )
        )
    return len(found)
