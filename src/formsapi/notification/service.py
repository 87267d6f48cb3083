"""Mail notifications: which members are told of a form's submissions (each
one, or a daily digest), whether the respondent gets a copy of their
answers, and what each mail of the outbox says when it is sent.

Mails are derived from the durable event stream: the webhook fan-out takes
each `submission.created` event off the event outbox in the transaction
that writes its mails here (`enqueue`), so posting pays nothing for them,
every submission committed gets its mails once, and none is written for a
submission rolled back. The sender (notification/sender.py) reads what a
mail says when it sends it: answers deleted meanwhile are never mailed."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from email.message import EmailMessage

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, FormNotFound
from formsapi.form import service as form_service
from formsapi.form.blocks import BlockList, Email, questions
from formsapi.kit.ids import new_id
from formsapi.member import service as member_service
from formsapi.models import Frequency, MailKind, MailStatus
from formsapi.notification import message, repository
from formsapi.notification.repository import ClaimedMail


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    email: str
    frequency: str | None  # None: not told


@dataclass(frozen=True, slots=True)
class FormNotifications:
    members: list[Member]
    copy_question: str | None
    email_questions: list[tuple[str, str]]  # (key, title) of the form's email questions


async def settings(session: AsyncSession, organization_id: str, form_id: str) -> FormNotifications:
    """The form's notification settings, with every member and the email
    questions a copy may go to."""
    form = await form_service.get(session, organization_id, form_id)
    chosen = await repository.recipients(session, organization_id, form.id)
    members = [
        Member(user.id, user.email, chosen.get(user.id))
        for user, _ in await member_service.list_members(session, organization_id)
    ]
    blocks = BlockList.validate_python(form.blocks)
    emails = [(q.key, q.title) for q in questions(blocks) if isinstance(q, Email)]
    copy = await repository.copy_question(session, organization_id, form.id)
    return FormNotifications(members, copy, emails)


async def update(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    chosen: dict[str, str],
    copy_question: str | None,
    now: datetime,
) -> FormNotifications:
    """Set who is told and how often (user id -> frequency; members only)
    and the email question a respondent's copy goes to (None: no copy)."""
    current = await settings(session, organization_id, form_id)
    members = {member.user_id for member in current.members}
    if set(chosen) - members:
        raise BadRequest("Only members of the organization can be told of submissions.")
    if set(chosen.values()) - {f.value for f in Frequency}:
        raise BadRequest("Choose each submission or a daily digest.")
    if copy_question is not None and copy_question not in dict(current.email_questions):
        raise BadRequest("A copy goes to the answer of one of the form's email questions.")
    await repository.set_recipients(session, organization_id, form_id, chosen, now)
    await repository.set_copy_question(session, organization_id, form_id, copy_question, now)
    return await settings(session, organization_id, form_id)


# The outbox.


@dataclass(frozen=True, slots=True)
class Created:
    """A submission.created event taken off the event outbox."""

    organization_id: str
    form_id: str
    submission_id: str


async def enqueue(session: AsyncSession, created: Sequence[Created], now: datetime) -> int:
    """Write the mails of these new submissions, in the caller's transaction
    (the one taking their events off the event outbox); how many."""
    if not created:
        return 0
    wanted: dict[str, list[str | None]] = {}
    for found in await repository.subscribed(session, sorted({c.form_id for c in created})):
        wanted.setdefault(found.form_id, []).append(found.user_id)
    rows = [
        _row(
            item.organization_id,
            item.form_id,
            MailKind.submission if user_id else MailKind.copy,
            now,
            submission_id=item.submission_id,
            user_id=user_id,
        )
        for item in created
        for user_id in wanted.get(item.form_id, ())
    ]
    await repository.add(session, rows)
    return len(rows)


def day_of(at: datetime) -> datetime:
    return datetime.combine(at.astimezone(UTC).date(), time(), tzinfo=UTC)


async def enqueue_digests(session: AsyncSession, now: datetime) -> int:
    """The digests of the UTC day before `now`'s for every member who chose
    one before that day ended; written once, whoever asks and how often."""
    day = day_of(now) - timedelta(days=1)
    end = day + timedelta(days=1)
    rows = [
        _row(organization_id, form_id, MailKind.digest, now, user_id=user_id, day=day)
        for organization_id, form_id, user_id in await repository.daily_recipients(session, end)
    ]
    await repository.add(session, rows)
    return len(rows)


def _row(
    organization_id: str,
    form_id: str,
    kind: MailKind,
    now: datetime,
    *,
    submission_id: str | None = None,
    user_id: str | None = None,
    day: datetime | None = None,
) -> dict[str, object]:
    return {
        "id": new_id("mail"),
        "organization_id": organization_id,
        "form_id": form_id,
        "kind": kind.value,
        "submission_id": submission_id,
        "user_id": user_id,
        "day": day,
        "status": MailStatus.pending.value,
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
    }


class Skip(Exception):
    """Nothing is to be sent for this mail any more; why, for its row."""


async def compose(
    session: AsyncSession, mail: ClaimedMail, sender: str, public_url: str
) -> EmailMessage:
    """The mail as it is to be sent now. Raises Skip when there is nothing
    to send: the submission deleted, the member gone or no longer told, a
    digest of a day without submissions, a respondent's address refused."""
    organization_id = mail.organization_id
    try:
        form = await form_service.get(session, organization_id, mail.form_id)
    except FormNotFound:
        raise Skip("the form was deleted") from None
    link = f"{public_url.rstrip('/')}/forms/{form.id}"
    if mail.kind == MailKind.digest.value:
        to = await _member_still_told(session, mail, Frequency.daily)
        assert mail.day is not None
        day = mail.day.astimezone(UTC)
        count = await repository.count_between(
            session, organization_id, form.id, day, day + timedelta(days=1)
        )
        if count == 0:
            raise Skip("no submission that day")
        return message.build(
            sender,
            to,
            f"{form.title}: {count} new response{'s' * (count != 1)} on {day:%Y-%m-%d}",
            message.digest_text(form.title, day, count, link),
            mail.id,
        )
    assert mail.submission_id is not None
    submission = await repository.submission(session, organization_id, mail.submission_id)
    if submission is None:
        raise Skip("the submission was deleted")
    version = await form_service.compiled_version(
        session, organization_id, form.id, submission.form_version
    )
    if version is None:
        raise Skip("the form's version is gone")
    if mail.kind == MailKind.copy.value:
        key = await repository.copy_question(session, organization_id, form.id)
        if key is None:
            raise Skip("copies were turned off")
        to_respondent = message.single_address(submission.answers.get(key))
        if to_respondent is None:
            raise Skip("the respondent's address is not one plain address")
        shown = version.in_language(submission.language) if submission.language else version
        text = message.answers_text(shown.blocks, submission.answers)
        return message.build(
            sender,
            to_respondent,
            f"Your answers to “{form.title}”",
            message.submission_text(form.title, submission.submitted_at, text, link, copy=True),
            mail.id,
        )
    to = await _member_still_told(session, mail, Frequency.each)
    text = message.answers_text(version.blocks, submission.answers)
    return message.build(
        sender,
        to,
        f"New response to “{form.title}”",
        message.submission_text(form.title, submission.submitted_at, text, link, copy=False),
        mail.id,
    )


async def _member_still_told(session: AsyncSession, mail: ClaimedMail, frequency: Frequency) -> str:
    assert mail.user_id is not None
    organization_id = mail.organization_id
    if await repository.frequency_of(session, organization_id, mail.form_id, mail.user_id) != (
        frequency.value
    ):
        raise Skip("the member is no longer told")
    to = await repository.member_email(session, organization_id, mail.user_id)
    if to is None:
        raise Skip("the member left the organization")
    return to
