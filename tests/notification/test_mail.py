"""Notification mail goes through a real SMTP server on loopback: each
submission to the members who chose it, a copy to the respondent, a daily
digest, once each, the server down or not; a respondent's address that is
not exactly one address is never mailed."""

from dataclasses import dataclass
from datetime import timedelta
from email.message import Message
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.form import service as form_service
from formsapi.kit.time import shift, utcnow
from formsapi.models import MailOutbox, Role
from formsapi.notification import service as notification_service
from formsapi.notification.sender import FIRST_DELAY
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.notification.conftest import PUBLIC, Mailing
from tests.support.factories import (
    EVERY_SCOPE,
    create_form,
    create_key,
    create_org,
    create_submission,
    create_user,
)
from tests.support.mail import Inbox, smtp_server

BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "email", "key": "email", "title": "Your email", "required": True},
    {"type": "single_choice", "key": "plan", "title": "Plan", "options": [
        {"value": "team", "label": "Team plan"}, {"value": "free", "label": "Free plan"}]},
    {"type": "long_text", "key": "note", "title": "Anything else?"},
]  # fmt: skip
RESPONDENT = "ada@example.net"


@dataclass
class Setup:
    form_id: str
    organization_id: str
    secret: str
    told: str  # a member told of each submission
    digest: str  # a member who gets the daily digest
    silent: str  # a member who chose nothing


async def _setup(session: AsyncSession, *, copy: bool = True) -> Setup:
    org = await create_org(session)
    owner = await create_user(session)
    _, secret = await create_key(session, org, user=owner, scopes=EVERY_SCOPE)
    digest = await create_user(session)
    silent = await create_user(session)
    _, _ = await create_key(session, org, role=Role.editor, user=digest)
    _, _ = await create_key(session, org, role=Role.viewer, user=silent)
    form = await create_form(session, org, title="Volunteers", blocks=BLOCKS)
    await notification_service.update(
        session,
        org.id,
        form.id,
        {owner.id: "each", digest.id: "daily"},
        "email" if copy else None,
        utcnow(),
    )
    await session.commit()
    return Setup(form.id, org.id, secret, owner.email, digest.email, silent.email)


async def _post(api: Api, setup: Setup, **answers: str) -> str:
    body = {"name": "Ada", "email": RESPONDENT, **answers}
    response = await api.post(
        f"/v1/forms/{setup.form_id}/submissions", setup.secret, json={"answers": body}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _text(message: Message) -> str:
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes)
    return body.decode().replace("\r\n", "\n")


async def _outbox(engine: AsyncEngine) -> list[MailOutbox]:
    async with AsyncSession(engine) as session:
        statement = unscoped(select(MailOutbox).order_by(MailOutbox.created_at), "the test")
        return list((await session.scalars(statement)).all())


async def test_a_submission_mails_the_chosen_members_and_a_copy_to_the_respondent(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    setup = await _setup(session)

    await _post(api, setup, plan="team", note="Weekends only")
    await mailing.run()
    await mailing.run()  # nothing more: each mail once

    [told] = inbox.to(setup.told)
    [copy] = inbox.to(RESPONDENT)
    assert len(inbox.messages) == 2  # neither the digest's member nor the silent one
    assert told["Subject"] == "New response to “Volunteers”"
    assert "Your name\n  Ada" in _text(told)
    assert "Anything else?\n  Weekends only" in _text(told)
    assert f"{PUBLIC}/forms/{setup.form_id}" in _text(told)
    assert copy["Subject"] == "Your answers to “Volunteers”"
    assert "Plan\n  Team plan" in _text(copy)  # the option's label: the form's words
    assert "Anything else?\n  (typed: not repeated in this mail)" in _text(copy)
    assert "Weekends only" not in _text(copy)
    assert told["Message-ID"] != copy["Message-ID"]
    assert {m.status for m in await _outbox(engine)} == {"sent"}


async def test_a_deleted_submission_is_never_mailed(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    setup = await _setup(session)
    submission_id = await _post(api, setup)
    await mailing.worker.dispatch()  # its mails are queued

    deleted = await api.delete(
        f"/v1/forms/{setup.form_id}/submissions/{submission_id}", setup.secret
    )
    await mailing.sender.drain()

    assert deleted.status_code == 204
    assert inbox.messages == []
    assert {m.status for m in await _outbox(engine)} == {"skipped"}


async def test_a_daily_digest_counts_the_days_submissions_once(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox
) -> None:
    setup = await _setup(session, copy=False)
    kept = [await _post(api, setup) for _ in range(3)]
    await api.delete(f"/v1/forms/{setup.form_id}/submissions/{kept.pop()}", setup.secret)
    await mailing.run()
    before = len(inbox.messages)

    with shift(timedelta(days=1)):
        await mailing.run()
        mailing.sender.digests_at = None  # look again for digests to write: none new
        await mailing.run()

    [digest] = inbox.to(setup.digest)
    assert before == 2  # the member told of each one (not of the deleted one); no digest yet
    assert "2 new responses" in digest["Subject"]
    assert f"received 2 new responses on {utcnow():%Y-%m-%d}" in _text(digest)
    assert f"{PUBLIC}/forms/{setup.form_id}" in _text(digest)
    assert "Ada" not in _text(digest)  # a count and a link, no answers


async def test_mail_waits_for_a_server_that_is_down_and_goes_once_it_is_back(
    api: Api, session: AsyncSession, mailing: Mailing, port: int, engine: AsyncEngine
) -> None:
    setup = await _setup(session, copy=False)
    await _post(api, setup)

    await mailing.run()  # no server listens
    [waiting] = await _outbox(engine)
    with smtp_server(port) as (_, inbox):
        await mailing.run()  # too early: it waits its turn
        early = len(inbox.messages)
        with shift(timedelta(seconds=FIRST_DELAY * 1.3)):
            await mailing.run()
            await mailing.run()
    [sent] = await _outbox(engine)

    post_attempt = waiting.next_attempt_at - waiting.created_at
    assert waiting.status == "pending"
    assert waiting.attempts == 1
    assert waiting.last_error is not None
    assert timedelta(seconds=FIRST_DELAY * 0.8) <= post_attempt <= timedelta(seconds=40)
    assert early == 0
    assert len(inbox.to(setup.told)) == 1
    assert (sent.status, sent.attempts) == ("sent", 2)


HOSTILE_ADDRESSES = [
    f"{RESPONDENT}\r\nBcc: victim@example.com",
    f"{RESPONDENT}\nBcc: victim@example.com",
    f"{RESPONDENT}, victim@example.com",
    f"{RESPONDENT};victim@example.com",
    f"Ada <{RESPONDENT}>",
    f'"victim@example.com" <{RESPONDENT}>',
    f"{RESPONDENT}\u2028Bcc: victim@example.com",
]


async def test_a_respondent_address_that_is_not_one_address_is_never_mailed(
    session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    # Stored as the API would never take them (the email question refuses
    # them): the copy is checked again when it is sent.
    setup = await _setup(session)
    org_id, form_id = setup.organization_id, setup.form_id
    form = await form_service.get(session, org_id, form_id)
    created = []
    for address in HOSTILE_ADDRESSES:
        submission = await create_submission(
            session,
            form,
            answers={"name": "Eve\r\nBcc: victim@example.com", "email": address},
        )
        created.append(notification_service.Created(org_id, form_id, submission.id))
    await notification_service.enqueue(session, created, utcnow(), mailing.sender.copies)
    await session.commit()

    await mailing.sender.drain()

    rows = await _outbox(engine)
    copies = [row for row in rows if row.kind == "copy"]
    assert {row.status for row in copies} == {"skipped"}
    assert all("not one plain address" in (row.last_error or "") for row in copies)
    assert all(m["To"] == setup.told for m in inbox.messages)  # the members' only
    assert inbox.recipients == [[setup.told]] * len(HOSTILE_ADDRESSES)
    assert len(inbox.messages) == len(HOSTILE_ADDRESSES)
    for message in inbox.messages:
        assert message["Bcc"] is None
        assert "Eve Bcc: victim@example.com" not in message["Subject"]
