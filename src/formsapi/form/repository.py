from collections.abc import Collection, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    DateTime,
    Interval,
    Row,
    Select,
    Text,
    bindparam,
    cast,
    func,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy import delete as sa_delete
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from formsapi.db.hot import HotStatement
from formsapi.kit.time import EPOCH
from formsapi.kit.time import offset as clock_offset
from formsapi.models import (
    AnswerCount,
    Form,
    FormStatus,
    FormVersion,
    Organization,
    PartialResponse,
    Submission,
    SubmissionCount,
    SubmissionDayCount,
    SubmissionTombstone,
)
from formsapi.models.base import days_after
from formsapi.tenancy import scoped, unscoped

SummaryRow = Row[str, str, str, str, int, datetime, int, int]


@cache
def _page_statement() -> Select[str, str, str, str, int, datetime, int, int]:
    """Built once; each row carries the organization's form count."""
    of_organization = scoped(Form, bindparam("organization_id"))
    total = select(func.count()).select_from(Form).where(of_organization).scalar_subquery()
    return (
        select(
            Form.id,
            Form.title,
            Form.slug,
            Form.status,
            Form.response_count,
            Form.created_at,
            Form.change_seq,
            total.label("total"),
        )
        .where(of_organization)
        .order_by(Form.created_at.desc(), Form.id.desc())
        .offset(bindparam("offset"))
        .limit(bindparam("limit"))
    )


async def list_page(
    session: AsyncSession, organization_id: str, offset: int, limit: int
) -> Sequence[SummaryRow]:
    connection = await session.connection()
    parameters = {"organization_id": organization_id, "offset": offset, "limit": limit}
    return (await connection.execute(_page_statement(), parameters)).all()


async def count(session: AsyncSession, organization_id: str) -> int:
    statement = select(func.count()).select_from(Form).where(scoped(Form, organization_id))
    return int(await session.scalar(statement) or 0)


async def get(
    session: AsyncSession, organization_id: str, form_id: str, *, for_update: bool = False
) -> Form | None:
    statement = select(Form).where(scoped(Form, organization_id), Form.id == form_id)
    if for_update:
        # Orders this change against concurrent submissions and edits of the
        # form, and reads it afresh: a form the session read before the lock
        # would otherwise keep the values it had then.
        statement = statement.with_for_update().execution_options(populate_existing=True)
    return await session.scalar(statement)


# Read before every summary, made or remembered (summary.service): the
# remembered one costs this statement alone.
_CHANGE_STATE = HotStatement(
    select(Form.change_seq, Form.version, Form.updated_at).where(
        scoped(Form, bindparam("organization_id")), Form.id == bindparam("form_id")
    )
)


async def change_state(
    session: AsyncSession, organization_id: str, form_id: str
) -> tuple[int, int, datetime] | None:
    """The form's change number, version and last change, without its blocks."""
    rows = await _CHANGE_STATE.all(
        session, {"organization_id": organization_id, "form_id": form_id}
    )
    return (rows[0][0], rows[0][1], rows[0][2]) if rows else None


async def titles(
    session: AsyncSession, organization_id: str, form_ids: Collection[str]
) -> dict[str, str]:
    """The title of each of the organization's forms among `form_ids`."""
    statement = select(Form.id, Form.title).where(
        scoped(Form, organization_id), Form.id.in_(form_ids)
    )
    return {row.id: row.title for row in await session.execute(statement)}


async def slug_taken(
    session: AsyncSession, organization_id: str, slug: str, except_form: str | None = None
) -> bool:
    statement = select(Form.id).where(scoped(Form, organization_id), Form.slug == slug)
    if except_form is not None:
        statement = statement.where(Form.id != except_form)
    return await session.scalar(statement.limit(1)) is not None


async def get_version(
    session: AsyncSession, organization_id: str, form_id: str, version: int
) -> FormVersion | None:
    return await session.get(FormVersion, (organization_id, form_id, version))


@cache
def submission_lock_statement(postgres: bool) -> Any:
    """Built once: posts serialize on this statement's row lock, and building
    it per post cost them (bench/RESULTS.md).

    On PostgreSQL a batch of posts first queues on the form's advisory lock
    (`queue`), in the same statement: waiting there, a transaction has no
    transaction id yet, so the events list and webhooks, which wait for every
    transaction older than an event to finish, do not wait for a queue of
    posts (event/repository.py, `settled`), and the form's transactions take
    their ids in the order they take the lock."""
    statement = update(Form).where(scoped(Form, bindparam("org")), Form.id == bindparam("form"))
    # The time of the submissions numbered: PostgreSQL's, read once the row is
    # locked, so that on any number of hosts, whatever their clocks, times
    # follow change numbers; moved by the service clock's :offset (tests
    # shift it) and cut to the milliseconds the API prints, as utcnow() is.
    # On SQLite, whose writers share one host, the caller's (None here).
    at: Any = literal(None, DateTime(timezone=True))
    if postgres:
        statement = statement.where(cast(_advisory(bindparam("form")), Text) == "")
        moved = func.clock_timestamp() + bindparam("offset", type_=Interval())
        at = func.date_trunc("milliseconds", moved)
    return (
        statement.where(Form.status == FormStatus.published)
        .values(
            response_count=Form.response_count + bindparam("n"),
            change_seq=Form.change_seq + bindparam("n"),
        )
        # The version only: its blocks are read (once) when this process has
        # not compiled it yet, so a post does not decode them under the lock.
        # Then what bounds the posts it may take (form/limits.py), and the
        # one-response rule a post is checked against under the lock.
        .returning(
            Form.version,
            Form.change_seq,
            at.label("at"),
            Form.response_count,
            Form.max_submissions,
            Form.opens_at,
            Form.closes_at,
            Form.quotas,
            Form.one_response_by,
            Form.one_response_question,
        )
        # No Form is loaded in a post's session: nothing for the ORM to update.
        .execution_options(synchronize_session=False)
    )


def _advisory(form_id: Any) -> Any:
    return func.pg_advisory_xact_lock(func.hashtextextended(form_id, 0))


Locked = Row[
    int,
    int,
    datetime | None,
    int,
    int | None,
    datetime | None,
    datetime | None,
    Any,
    str | None,
    str | None,
]


async def lock_for_submission(
    session: AsyncSession, organization_id: str, form_id: str, count: int = 1
) -> Locked | None:
    """Count `count` more submissions, number their changes, and read what
    they answer, atomically: the lock this takes orders concurrent writes to
    the form's submissions until commit, so change numbers follow commit
    order, and a rollback takes both back. Returned: the version, the last
    number (the batch's are the `count` numbers up to it), on PostgreSQL the
    database's time once the lock was held, then the response count (the
    batch's included), the limit, opening and closing times and quotas, and
    the form's one-response rule (by, question). None if the form is missing
    or not published."""
    postgres = session.get_bind().dialect.name == "postgresql"
    parameters: dict[str, Any] = {"org": organization_id, "form": form_id, "n": count}
    if postgres:
        parameters["offset"] = clock_offset()
    # On the connection: the session's ORM-enabled execution of an UPDATE
    # (bulk persistence) cost more CPU than the statement, for nothing here.
    connection = await session.connection()
    return (await connection.execute(submission_lock_statement(postgres), parameters)).first()


async def queue(session: AsyncSession, form_id: str) -> None:
    """Wait for the form's turn to write its submissions, before anything
    else the transaction writes (PostgreSQL; a SQLite write transaction
    already excludes every other writer). Held until commit, like the row
    lock that follows: the form's writers then take their transaction ids,
    which order the events list, in the order they number their changes."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(_advisory(bindparam("form"))), {"form": form_id})


async def definition_of(
    session: AsyncSession, organization_id: str, form_id: str
) -> Row[list[dict[str, Any]], dict[str, Any] | None]:
    """The blocks and definition the form has now (its row locked by the caller)."""
    statement = select(Form.blocks, Form.definition).where(
        scoped(Form, organization_id), Form.id == form_id
    )
    return (await session.execute(statement)).one()


async def lock(session: AsyncSession, organization_id: str, form_id: str) -> bool:
    """Take the form's row lock until commit, as a write to its submissions
    does (SQLite's write transaction already excludes every other writer);
    False if there is no such form."""
    locked = await session.execute(
        select(Form.id).where(scoped(Form, organization_id), Form.id == form_id).with_for_update()
    )
    return locked.first() is not None


async def next_change(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    count_delta: int = 0,
    changes: int = 1,
) -> int | None:
    """Number a change (or the last of `changes` changes, numbered in a row)
    to the form's submissions (moving its counter by `count_delta`), taking
    the form's row lock until commit; None if there is no such form."""
    values: dict[str, Any] = {"change_seq": Form.change_seq + changes}
    if count_delta:
        values["response_count"] = Form.response_count + count_delta
    moved = await session.execute(
        update(Form)
        .where(scoped(Form, organization_id), Form.id == form_id)
        .values(values)
        .returning(Form.change_seq)
    )
    return moved.scalar_one_or_none()


async def retained(session: AsyncSession) -> Sequence[Row[str, str, int | None]]:
    """Every form that keeps its submissions for a number of days: its
    organization, id and days."""
    statement = unscoped(
        select(Form.organization_id, Form.id, Form.retention_days).where(
            Form.retention_days.is_not(None)
        ),
        "the retention sweep covers every organization's forms",
    )
    found: Sequence[Row[str, str, int | None]] = (await session.execute(statement)).all()
    return found


async def largest(
    session: AsyncSession, least: int, limit: int
) -> Sequence[Row[str, str, int, int]]:
    """Up to `limit` forms of every organization with at least `least`
    submissions, the most first: organization, id, submissions and change
    number, without their blocks."""
    statement = unscoped(
        select(Form.organization_id, Form.id, Form.response_count, Form.change_seq)
        .where(Form.response_count >= least)
        .order_by(Form.response_count.desc(), Form.id)
        .limit(limit),
        "summaries warm the largest forms of every organization",
    )
    found: Sequence[Row[str, str, int, int]] = (await session.execute(statement)).all()
    return found


async def delete(session: AsyncSession, organization_id: str, form_id: str) -> None:
    """The form and everything hanging off it, explicitly (not by cascade
    alone), so each delete uses an index that starts with the organization."""
    tables = (Submission, SubmissionTombstone, SubmissionCount, SubmissionDayCount, FormVersion)
    for table in tables:
        await session.execute(
            sa_delete(table).where(scoped(table, organization_id), table.form_id == form_id)
        )
    await session.execute(sa_delete(Form).where(scoped(Form, organization_id), Form.id == form_id))


async def get_public(session: AsyncSession, form_id: str) -> Row[Form, list[str]] | None:
    """A form by id alone, for its public page, with the origins its
    organization lets frame its forms (the form may have its own, which
    hosted.service.public_form prefers): the one lookup without an
    organization, because the respondent has none. Drafts and archived forms
    are not public. Everything after it uses the form's organization."""
    statement = (
        select(Form, Organization.embed_origins)
        .join(Organization, Organization.id == Form.organization_id)
        .where(Form.id == form_id, Form.status.in_([FormStatus.published, FormStatus.closed]))
        # Its questions come from the version compiled in memory (service.version_of):
        # decoding up to a megabyte of JSON on every page and post took more
        # than drawing the page.
        .options(defer(Form.blocks, raiseload=True), defer(Form.definition, raiseload=True))
    )
    statement = unscoped(statement, "a public form's page, found by its id alone")
    return (await session.execute(statement)).first()


async def lock_all(session: AsyncSession, organization_id: str) -> None:
    """Hold every form of the organization, as a write to its submissions
    does one: its writers wait until this transaction ends."""
    await session.execute(select(Form.id).where(scoped(Form, organization_id)).with_for_update())


async def versions_of_organization(
    session: AsyncSession, organization_id: str
) -> Sequence[FormVersion]:
    """Every version of every form of the organization."""
    return (
        await session.scalars(select(FormVersion).where(scoped(FormVersion, organization_id)))
    ).all()


async def all_versions(
    session: AsyncSession, organization_id: str, form_id: str
) -> Sequence[FormVersion]:
    statement = (
        select(FormVersion)
        .where(scoped(FormVersion, organization_id), FormVersion.form_id == form_id)
        .order_by(FormVersion.version.desc())
    )
    return (await session.scalars(statement)).all()


async def places_taken(
    session: AsyncSession, organization_id: str, form_id: str, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """The live submissions that chose each (question key, option as JSON),
    over every version of the form, from the all-time answer counts."""
    if not keys:
        return {}
    statement = (
        select(AnswerCount.key, AnswerCount.value, func.sum(AnswerCount.count))
        .where(
            scoped(AnswerCount, organization_id),
            AnswerCount.form_id == form_id,
            AnswerCount.period == "t",
            AnswerCount.start == EPOCH,
            tuple_(AnswerCount.key, AnswerCount.value).in_(list(keys)),
        )
        .group_by(AnswerCount.key, AnswerCount.value)
    )
    rows = (await session.execute(statement)).all()
    return {(key, value): int(total or 0) for key, value, total in rows}


def due_statement(now: datetime) -> Any:
    """Forms of every organization whose schedule is due at `now`: the
    sweep's (form/service.py, `settle_due`)."""
    statement = select(Form.organization_id, Form.id).where(
        or_(
            (Form.status == FormStatus.published) & (Form.closes_at <= now),
            (Form.status == FormStatus.closed) & (Form.opens_at <= now),
        )
    )
    return unscoped(statement, "the schedule's sweep, across organizations")


async def keep_partials_for(
    session: AsyncSession, organization_id: str, form_id: str, days: int, now: datetime
) -> None:
    """The form's open partial responses expire `days` after their last
    change, as those saved from now on will (its resumeDays changed). Here,
    not in partial/: the form's time rules them, and partial/ reads forms."""
    statement = (
        update(PartialResponse)
        .where(
            scoped(PartialResponse, organization_id),
            PartialResponse.form_id == form_id,
            PartialResponse.completed_at.is_(None),
            PartialResponse.expires_at > now,
        )
        .values(expires_at=days_after(PartialResponse.updated_at, days))
        .execution_options(synchronize_session=False)
    )
    connection = await session.connection()
    await connection.execute(statement)
