"""Mail notifications: which members are told of a form's submissions (each
one, or a daily digest), whether the respondent gets a copy of their
answers, and what each mail of the outbox says when it is sent.

Mails are derived from the durable event stream: the webhook fan-out takes
each `submission.created` event off the event outbox in the transaction
that writes its mails here (`enqueue`), so posting pays nothing for them,
every submission committed gets its mails once, and none is written for a
submission rolled back. The sender (notification/sender.py) reads what a
mail says when it sends it: answers deleted meanwhile are never mailed.

A respondent's copy goes to whatever address was typed into the form, so
anyone could aim it at anyone. It is bounded three ways: it carries the
form's own words only (message.py), never anyone's typed text; an address
gets at most FORMSAPI_COPIES_PER_ADDRESS copies a UTC day from the whole
server, however many forms and posters aim at it; a form sends at most
FORMSAPI_COPIES_PER_FORM a day, however many addresses are typed. Both are
counted in the fan-out's transaction, on rows it holds locked until commit,
so they are exact across processes and a copy rolled back is not counted.
An address is counted by its HMAC under a key derived from
FORMSAPI_SECRET_KEY, never in the clear: without the key no copy goes."""

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from email.message import EmailMessage

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.admission.service import normalized_email
from formsapi.config import Settings
from formsapi.errors import BadRequest, FormNotFound
from formsapi.form import service as form_service
from formsapi.kit.ids import new_id
from formsapi.kit.secretbox import SecretBox
from formsapi.language.blocks import Email, questions
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
    emails = [
        (q.key, q.title)
        for q in questions(form_service.current(form).blocks)
        if isinstance(q, Email)
    ]
    copy = await repository.copy_question(session, organization_id, form.id)
    return FormNotifications(members, copy, emails)


async def update(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    chosen: dict[str, str],
    copy_question: str | None,
    now: datetime,
    *,
    keyed: bool = True,
) -> FormNotifications:
    """Set who is told and how often (user id -> frequency; members only)
    and the email question a respondent's copy goes to (None: no copy),
    which needs the server's secret key (`keyed`) to count copies by."""
    current = await settings(session, organization_id, form_id)
    members = {member.user_id for member in current.members}
    if set(chosen) - members:
        raise BadRequest("Only members of the organization can be told of submissions.")
    if set(chosen.values()) - {f.value for f in Frequency}:
        raise BadRequest("Choose each submission or a daily digest.")
    if copy_question is not None and copy_question not in dict(current.email_questions):
        raise BadRequest("A copy goes to the answer of one of the form's email questions.")
    if copy_question is not None and not keyed:
        raise BadRequest(
            "A copy for the respondent needs FORMSAPI_SECRET_KEY set on this server: "
            "the copies each address gets are counted by a keyed hash of it."
        )
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


@dataclass(frozen=True, slots=True)
class CopyRules:
    """What bounds respondents' copies: the day's caps, and the key that
    counts an address (None without FORMSAPI_SECRET_KEY: no copy goes)."""

    box: SecretBox | None
    per_address: int
    per_form: int

    @classmethod
    def of(cls, settings: Settings, box: SecretBox | None) -> "CopyRules":
        return cls(box, settings.copies_per_address, settings.copies_per_form)

    def recipient(self, address: str) -> bytes | None:
        """The keyed hash of the mailbox the address reaches, the same on
        every form (a mailbox is counted across them all); None without a key."""
        if self.box is None:
            return None
        key = self.box.sign(b"formsapi copy recipient").encode()
        return hmac.new(key, mailbox(address).encode(), hashlib.sha256).digest()


def mailbox(address: str) -> str:
    """An address as the mailbox it reaches, for counting: casefolded, and
    its local part without a +tag or dots, which many providers ignore
    (ada+1@, a.d.a@ and ada@ reach one inbox). Two people this merges share
    a day's copies; an attacker it did not merge would mail one inbox more."""
    local, _, domain = normalized_email(address).rpartition("@")
    return f"{local.split('+', 1)[0].replace('.', '')}@{domain}"


ADDRESS, FORM = "address", "form"


async def enqueue(
    session: AsyncSession, created: Sequence[Created], now: datetime, copies: CopyRules
) -> int:
    """Write the mails of these new submissions, in the caller's transaction
    (the one taking their events off the event outbox); how many. A copy
    past the day's caps is written as skipped, saying why."""
    if not created:
        return 0
    form_ids = sorted({c.form_id for c in created})
    wanted: dict[str, list[str]] = {}
    for form_id, user_id in await repository.subscribed(session, form_ids):
        wanted.setdefault(form_id, []).append(user_id)
    rows = [
        _row(
            item.organization_id,
            item.form_id,
            MailKind.submission,
            now,
            submission_id=item.submission_id,
            user_id=user_id,
        )
        for item in created
        for user_id in wanted.get(item.form_id, ())
    ]
    asked = await repository.copy_questions(session, form_ids)
    rows += await _copies([c for c in created if c.form_id in asked], asked, now, copies, session)
    await repository.add(session, rows)
    return len(rows)


async def _copies(
    created: Sequence[Created],
    asked: dict[str, str],
    now: datetime,
    copies: CopyRules,
    session: AsyncSession,
) -> list[dict[str, object]]:
    """The copies of these submissions, within the day's caps."""
    addresses: dict[str, object] = {}
    by_form: dict[tuple[str, str], list[str]] = {}
    for item in created:
        by_form.setdefault((item.organization_id, item.form_id), []).append(item.submission_id)
    for (organization_id, form_id), ids in by_form.items():
        addresses |= await repository.answers_to(
            session, organization_id, form_id, asked[form_id], ids
        )
    recipients: dict[str, bytes | None] = {}
    for item in created:
        address = message.single_address(addresses.get(item.submission_id))
        recipients[item.submission_id] = None if address is None else copies.recipient(address)
    day = day_of(now)
    keys = {(FORM, item.form_id) for item in created} | {
        (ADDRESS, digest.hex()) for digest in recipients.values() if digest is not None
    }
    held = await repository.hold_copy_counts(session, sorted(keys), day)
    counts = dict(held)
    rows = []
    for item in created:
        digest = recipients[item.submission_id]
        refused = None
        if copies.box is None:
            refused = "FORMSAPI_SECRET_KEY is not set: copies cannot be counted"
        elif digest is None:
            refused = "the respondent's address is not one plain address"
        elif counts[FORM, item.form_id] >= copies.per_form:
            refused = f"the form mailed its {copies.per_form} copies of the day"
        elif counts[ADDRESS, digest.hex()] >= copies.per_address:
            refused = f"the address was mailed its {copies.per_address} copies of the day"
        else:
            counts[FORM, item.form_id] += 1
            counts[ADDRESS, digest.hex()] += 1
        rows.append(
            _row(
                item.organization_id,
                item.form_id,
                MailKind.copy,
                now,
                submission_id=item.submission_id,
                recipient=None if refused else digest,
                refused=refused,
            )
        )
    changed = {key: count for key, count in counts.items() if count != held[key]}
    if changed:
        await repository.set_copy_counts(session, changed, day)
    return rows


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
    recipient: bytes | None = None,
    refused: str | None = None,  # written skipped, for this reason
) -> dict[str, object]:
    return {
        "id": new_id("mail"),
        "organization_id": organization_id,
        "form_id": form_id,
        "kind": kind.value,
        "submission_id": submission_id,
        "user_id": user_id,
        "day": day,
        "recipient": recipient,
        "status": (MailStatus.skipped if refused else MailStatus.pending).value,
        "attempts": 0,
        "next_attempt_at": now,
        "last_error": refused,
        "created_at": now,
    }


class Skip(Exception):
    """Nothing is to be sent for this mail any more; why, for its row."""


async def compose(
    session: AsyncSession, mail: ClaimedMail, sender: str, public_url: str, copies: CopyRules
) -> EmailMessage:
    """The mail as it is to be sent now. Raises Skip when there is nothing
    to send: the submission deleted, the member gone or no longer told, a
    digest of a day without submissions, a respondent's address refused or
    not the one its copy was counted for."""
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
        counted = copies.recipient(to_respondent)
        if counted is None:
            raise Skip("FORMSAPI_SECRET_KEY is not set: copies cannot be counted")
        if mail.recipient is None or counted != mail.recipient:
            raise Skip("the address is not the one the copy was counted for")
        shown = version.in_language(submission.language) if submission.language else version
        text = message.copy_text(shown.blocks, submission.answers)
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
