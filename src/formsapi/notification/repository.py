"""The SQL of mail notifications: a form's settings for one organization,
and the mail outbox the senders share across organizations (writes from the
event fan-out, digests, claims, outcomes), which says so with `unscoped`."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    Row,
    and_,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import (
    CopyCount,
    Frequency,
    MailOutbox,
    MailStatus,
    Membership,
    NotificationRecipient,
    RespondentCopy,
    Submission,
    User,
)
from formsapi.tenancy import scoped, unscoped

SENDERS = "mail senders serve every organization"
COPIES = "a recipient's copies are counted across organizations"

# Written into the SQL, not bound, so the partial index on pending rows is used.
PENDING: Any = literal_column("'pending'")


# A form's settings, for one organization.


async def recipients(session: AsyncSession, organization_id: str, form_id: str) -> dict[str, str]:
    """Who is told of the form's submissions: user id -> frequency."""
    statement = select(NotificationRecipient.user_id, NotificationRecipient.frequency).where(
        scoped(NotificationRecipient, organization_id), NotificationRecipient.form_id == form_id
    )
    return {row.user_id: row.frequency for row in await session.execute(statement)}


async def set_recipients(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    chosen: Mapping[str, str],
    now: datetime,
) -> None:
    """Replace the form's recipients with `chosen` (user id -> frequency);
    one whose frequency did not change keeps when they chose it."""
    kept = await recipients(session, organization_id, form_id)
    gone = [user_id for user_id, frequency in kept.items() if chosen.get(user_id) != frequency]
    if gone:
        await session.execute(
            delete(NotificationRecipient).where(
                scoped(NotificationRecipient, organization_id),
                NotificationRecipient.form_id == form_id,
                NotificationRecipient.user_id.in_(gone),
            )
        )
    new = [
        {
            "organization_id": organization_id,
            "form_id": form_id,
            "user_id": user_id,
            "frequency": frequency,
            "created_at": now,
        }
        for user_id, frequency in sorted(chosen.items())
        if kept.get(user_id) != frequency
    ]
    if new:
        await session.execute(insert(NotificationRecipient), new)


async def copy_question(session: AsyncSession, organization_id: str, form_id: str) -> str | None:
    """The email question whose answer gets a copy of the answers, if any."""
    statement = select(RespondentCopy.question_key).where(
        scoped(RespondentCopy, organization_id), RespondentCopy.form_id == form_id
    )
    return await session.scalar(statement)


async def set_copy_question(
    session: AsyncSession, organization_id: str, form_id: str, key: str | None, now: datetime
) -> None:
    await session.execute(
        delete(RespondentCopy).where(
            scoped(RespondentCopy, organization_id), RespondentCopy.form_id == form_id
        )
    )
    if key is not None:
        await session.execute(
            insert(RespondentCopy).values(
                organization_id=organization_id, form_id=form_id, question_key=key, created_at=now
            )
        )


# What a mail says, read when it is sent.


async def member_email(session: AsyncSession, organization_id: str, user_id: str) -> str | None:
    """A member's address; None once they have left the organization."""
    statement = (
        select(User.email)
        .join(Membership, Membership.user_id == User.id)
        .where(scoped(Membership, organization_id), User.id == user_id)
    )
    return await session.scalar(statement)


async def frequency_of(
    session: AsyncSession, organization_id: str, form_id: str, user_id: str
) -> str | None:
    statement = select(NotificationRecipient.frequency).where(
        scoped(NotificationRecipient, organization_id),
        NotificationRecipient.form_id == form_id,
        NotificationRecipient.user_id == user_id,
    )
    return await session.scalar(statement)


async def submission(
    session: AsyncSession, organization_id: str, submission_id: str
) -> Submission | None:
    statement = select(Submission).where(
        scoped(Submission, organization_id), Submission.id == submission_id
    )
    return await session.scalar(statement)


async def count_between(
    session: AsyncSession, organization_id: str, form_id: str, start: datetime, end: datetime
) -> int:
    """The form's submissions kept (not deleted) from `start` to before `end`."""
    statement = select(func.count()).where(
        scoped(Submission, organization_id),
        Submission.form_id == form_id,
        Submission.submitted_at >= start,
        Submission.submitted_at < end,
    )
    return int(await session.scalar(statement) or 0)


# The outbox, across organizations.


async def subscribed(session: AsyncSession, form_ids: Sequence[str]) -> list[tuple[str, str]]:
    """The members told of each submission of these forms: (form_id, user_id)."""
    members = unscoped(
        select(NotificationRecipient.form_id, NotificationRecipient.user_id).where(
            NotificationRecipient.form_id.in_(form_ids),
            NotificationRecipient.frequency == Frequency.each.value,
        ),
        SENDERS,
    )
    return [(form_id, user_id) for form_id, user_id in await session.execute(members)]


async def copy_questions(session: AsyncSession, form_ids: Sequence[str]) -> dict[str, str]:
    """The forms among these whose respondents get a copy: form id -> the
    email question the copy goes to."""
    statement = unscoped(
        select(RespondentCopy.form_id, RespondentCopy.question_key).where(
            RespondentCopy.form_id.in_(form_ids)
        ),
        SENDERS,
    )
    return {row.form_id: row.question_key for row in await session.execute(statement)}


async def answers_to(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    key: str,
    submission_ids: Sequence[str],
) -> dict[str, Any]:
    """Each of these submissions' answer to the question `key` (read out of
    the answers by the database): submission id -> answer, None unanswered."""
    statement = select(Submission.id, Submission.answers[key]).where(
        scoped(Submission, organization_id),
        Submission.form_id == form_id,
        Submission.id.in_(submission_ids),
    )
    return {row[0]: row[1] for row in await session.execute(statement)}


# A day's copies, counted across organizations.

CopyKey = tuple[str, str]  # (scope, key): ("address", hex digest) or ("form", form id)


async def hold_copy_counts(
    session: AsyncSession, keys: Sequence[CopyKey], day: datetime
) -> dict[CopyKey, int]:
    """The day's count under each key, its row made if missing and locked
    until the transaction ends: a fan-out in another process counting the
    same recipient or form waits for this one's counts. One statement, its
    rows in the order of `keys` (sorted by the caller), so two fan-outs
    take the same rows in the same order and never wait for each other in
    a circle."""
    if not keys:
        return {}
    rows = [{"scope": scope, "key": key, "day": day, "count": 0} for scope, key in keys]
    dialect = session.get_bind().dialect.name
    inserted: Any = (postgresql if dialect == "postgresql" else sqlite).insert(CopyCount)
    statement = unscoped(
        inserted.values(rows)
        .on_conflict_do_update(
            index_elements=[CopyCount.scope, CopyCount.key, CopyCount.day],
            set_={"count": inserted.excluded.count + CopyCount.count},
        )
        .returning(CopyCount.scope, CopyCount.key, CopyCount.count),
        COPIES,
    )
    return {(scope, key): count for scope, key, count in await session.execute(statement)}


async def set_copy_counts(
    session: AsyncSession, counts: Mapping[CopyKey, int], day: datetime
) -> None:
    """Write the day's counts of rows this transaction holds (hold_copy_counts)."""
    rows = [
        {"scope": scope, "key": key, "day": day, "count": count}
        for (scope, key), count in counts.items()
    ]
    await session.execute(unscoped(update(CopyCount), COPIES), rows)  # by primary key


async def purge_copy_counts(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` counts of days before `before`."""
    old = unscoped(
        select(CopyCount.scope, CopyCount.key, CopyCount.day)
        .where(CopyCount.day < before)
        .limit(batch),
        COPIES,
    )
    found = (await session.execute(old)).all()
    if not found:
        return 0
    statement = unscoped(
        delete(CopyCount).where(tuple_(CopyCount.scope, CopyCount.key, CopyCount.day).in_(found)),
        COPIES,
    )
    result: Any = await session.execute(statement)
    return int(result.rowcount or 0)


async def daily_recipients(
    session: AsyncSession, subscribed_before: datetime
) -> Sequence[Row[str, str, str]]:
    """Every digest's (organization_id, form_id, user_id), chosen before
    `subscribed_before`."""
    statement = unscoped(
        select(
            NotificationRecipient.organization_id,
            NotificationRecipient.form_id,
            NotificationRecipient.user_id,
        ).where(
            NotificationRecipient.frequency == Frequency.daily.value,
            NotificationRecipient.created_at < subscribed_before,
        ),
        SENDERS,
    )
    return (await session.execute(statement)).all()


async def add(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Write mails to send; a digest already written (by another sender, or
    before a restart) is left as it is."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        statement: Any = postgresql.insert(MailOutbox).on_conflict_do_nothing()
    else:
        statement = sqlite.insert(MailOutbox).on_conflict_do_nothing()
    await session.execute(statement, rows)


class ClaimedMail(NamedTuple):
    id: str
    organization_id: str
    form_id: str
    kind: str
    submission_id: str | None
    user_id: str | None
    day: datetime | None
    recipient: bytes | None
    attempts: int
    created_at: datetime
    lease_until: datetime


def _due(now: datetime) -> Any:
    return and_(
        MailOutbox.status == PENDING,
        MailOutbox.next_attempt_at <= now,
        or_(MailOutbox.lease_until.is_(None), MailOutbox.lease_until < now),
    )


async def claim(
    session: AsyncSession, now: datetime, lease_until: datetime, limit: int
) -> list[ClaimedMail]:
    """Lease up to `limit` due mails, the longest due first. On PostgreSQL
    rows another sender is claiming are skipped, never waited for. The lease
    is the claim's mark: an outcome is written only while it is still there."""
    free = select(MailOutbox.id).where(_due(now)).order_by(MailOutbox.next_attempt_at).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        free = free.with_for_update(skip_locked=True)
    statement = unscoped(
        update(MailOutbox)
        .where(MailOutbox.id.in_(free.scalar_subquery()))
        .values(lease_until=lease_until)
        .returning(*(getattr(MailOutbox, name) for name in ClaimedMail._fields))
        .execution_options(synchronize_session=False),
        SENDERS,
    )
    return [ClaimedMail._make(row) for row in await session.execute(statement)]


async def finish(
    session: AsyncSession,
    mail: ClaimedMail,
    status: MailStatus,
    at: datetime,
    *,
    next_attempt_at: datetime | None = None,
    error: str | None = None,
) -> bool:
    """Write what came of the claimed mail's attempt, if it is still this
    claim's (its lease unchanged); whether it was."""
    statement = unscoped(
        update(MailOutbox)
        .where(
            MailOutbox.id == mail.id,
            MailOutbox.status == PENDING,
            MailOutbox.lease_until == mail.lease_until,
        )
        .values(
            status=status.value,
            attempts=MailOutbox.attempts + 1,
            next_attempt_at=next_attempt_at or at,
            lease_until=None,
            last_error=error,
            sent_at=at if status is MailStatus.sent else None,
        )
        .execution_options(synchronize_session=False),
        SENDERS,
    )
    result: Any = await session.execute(statement)
    return bool(result.rowcount)


async def release(session: AsyncSession, mails: Sequence[ClaimedMail]) -> None:
    """Hand back claimed mails not sent (a sender stopping): due at once."""
    for mail in mails:
        await session.execute(
            unscoped(
                update(MailOutbox)
                .where(MailOutbox.id == mail.id, MailOutbox.lease_until == mail.lease_until)
                .values(lease_until=None),
                SENDERS,
            )
        )


async def purge(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` mails written before `before` and done with."""
    old = unscoped(
        select(MailOutbox.id)
        .where(MailOutbox.created_at < before, MailOutbox.status != PENDING)
        .limit(batch),
        SENDERS,
    )
    statement = unscoped(
        delete(MailOutbox).where(MailOutbox.id.in_(old.scalar_subquery())), SENDERS
    )
    result: Any = await session.execute(statement)
    return int(result.rowcount or 0)
