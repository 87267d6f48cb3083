"""A respondent's copy cannot make a form a mail relay. Whoever fills a form
in types the address its copy goes to, so a copy carries the form's own
words, never what was typed; an address gets at most
FORMSAPI_COPIES_PER_ADDRESS copies a UTC day however often anyone posts,
and a form sends at most FORMSAPI_COPIES_PER_FORM a day however many
addresses are typed, counted exactly by fan-outs that race. Posted to the
hosted page as an anonymous visitor would, from one address and from many,
and mailed to a real SMTP server on loopback."""

import asyncio
from datetime import timedelta
from email.message import Message
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.errors import BadRequest
from formsapi.form import service as form_service
from formsapi.kit.time import shift, utcnow
from formsapi.models import CopyCount, MailOutbox
from formsapi.notification import service as notification_service
from formsapi.notification.retention import purge_copy_counts
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
from tests.support.locks import statement_waiting_on_a_lock
from tests.support.mail import Inbox

BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "email", "key": "email", "title": "Your email", "required": True},
    {"type": "single_choice", "key": "plan", "title": "Plan", "allowOther": True, "options": [
        {"value": "team", "label": "Team plan"}, {"value": "free", "label": "Free plan"}]},
    {"type": "number", "key": "seats", "title": "Seats"},
    {"type": "date", "key": "day", "title": "Which day?"},
    {"type": "yes_no", "key": "again", "title": "Would you come again, {{name|friend}}?"},
    {"type": "long_text", "key": "note", "title": "Anything else?"},
]  # fmt: skip
SPAM = "Claim your prize at https://prize.example/win"
PHONE = "18005550199"
VICTIM = "victim@example.org"
POSTS = 40
PER_FORM = 20  # this file's FORMSAPI_COPIES_PER_FORM, to reach it in a test


@pytest.fixture
def settings(database_url: str, port: int) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        smtp_url=f"smtp://127.0.0.1:{port}?timeout=2",
        public_url=PUBLIC,
        trusted_proxies=["127.0.0.1"],  # each post says its address in X-Forwarded-For
        copies_per_form=PER_FORM,
    )


async def _form(session: AsyncSession, *, told: bool = False) -> tuple[str, str, str]:
    """A published form whose respondents get a copy: (form id, organization
    id, a key's secret); `told`: its owner is mailed each response too."""
    org = await create_org(session)
    owner = await create_user(session)
    _, secret = await create_key(session, org, scopes=EVERY_SCOPE, user=owner)
    form = await create_form(session, org, title="Open day", blocks=BLOCKS)
    members = {owner.id: "each"} if told else {}
    await notification_service.update(session, org.id, form.id, members, "email", utcnow())
    await session.commit()
    return form.id, org.id, secret


async def _post(api: Api, form_id: str, address: str, client: str) -> int:
    answered = {"name": SPAM, "email": address, "note": SPAM, "seats": PHONE}
    response = await api.post(f"/f/{form_id}", data=answered, headers={"X-Forwarded-For": client})
    return response.status_code


def _text(message: Message) -> str:
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes)
    return body.decode().replace("\r\n", "\n")


async def _copies(engine: AsyncEngine, form_id: str) -> list[MailOutbox]:
    async with AsyncSession(engine) as session:
        statement = unscoped(
            select(MailOutbox).where(MailOutbox.form_id == form_id, MailOutbox.kind == "copy"),
            "the test",
        )
        return list((await session.scalars(statement)).all())


async def test_a_copy_carries_the_forms_words_and_never_what_was_typed(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox
) -> None:
    form_id, _, _ = await _form(session, told=True)
    answered = {
        "name": SPAM,
        "email": VICTIM,
        "plan": "other",
        "plan_other": SPAM,
        "seats": PHONE,
        "day": "2026-12-24",
        "again": "yes",
        "note": SPAM,
    }

    posted = await api.post(f"/f/{form_id}", data=answered)
    await mailing.run()

    [copy] = inbox.to(VICTIM)
    [told] = [m for m in inbox.messages if m["To"] != VICTIM]
    text = _text(copy)
    assert posted.status_code == 303
    assert "Plan\n  Other" in text
    assert "Which day?\n  2026-12-24" in text
    assert "Would you come again, friend?\n  Yes" in text  # a recalled answer is not
    assert "Anything else?\n  (typed: not repeated in this mail)" in text
    for typed in (SPAM, "prize.example", PHONE):
        assert typed not in text
        assert typed not in copy["Subject"]
    assert SPAM in _text(told)  # the form's own members read every answer


async def test_one_address_posting_again_and_again_mails_its_target_three_copies_a_day(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    form_id, _, _ = await _form(session)

    answers = [await _post(api, form_id, VICTIM, "198.51.100.1") for _ in range(POSTS)]
    await mailing.run()
    first_day = len(inbox.to(VICTIM))
    with shift(timedelta(days=1)):  # the next UTC day, from another address
        later = [await _post(api, form_id, VICTIM, "198.51.100.2") for _ in range(5)]
        await mailing.run()

    taken = answers.count(303)
    skipped = [copy for copy in await _copies(engine, form_id) if copy.status == "skipped"]
    assert taken == 30  # FORMSAPI_PUBLIC_POSTS_PER_IP: the rest were refused, 429
    assert answers.count(429) == POSTS - taken
    assert later == [303] * 5
    assert first_day == 3
    assert len(inbox.to(VICTIM)) == 6
    assert len(inbox.messages) == 6
    assert len(skipped) == taken - 3 + 5 - 3
    assert {copy.last_error for copy in skipped} == {
        "the address was mailed its 3 copies of the day"
    }


async def test_many_addresses_aiming_at_many_people_get_no_more_than_the_forms_day(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    form_id, _, _ = await _form(session)

    answers = [
        await _post(api, form_id, f"person{n}@example.org", f"198.51.100.{n + 10}")
        for n in range(POSTS)
    ]
    await mailing.run()

    recipients = {str(message["To"]) for message in inbox.messages}
    skipped = [copy for copy in await _copies(engine, form_id) if copy.status == "skipped"]
    assert answers == [303] * POSTS  # every post is taken; only the copies stop
    assert len(inbox.messages) == PER_FORM
    assert len(recipients) == PER_FORM
    assert len(skipped) == POSTS - PER_FORM
    assert {copy.last_error for copy in skipped} == {
        f"the form mailed its {PER_FORM} copies of the day"
    }
    assert not any(SPAM in _text(message) for message in inbox.messages)


async def test_an_address_is_counted_across_forms_and_organizations(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox
) -> None:
    forms = [(await _form(session))[0] for _ in range(3)]

    for n, form_id in enumerate(forms):
        for m in range(2):
            # One address, written as people write it: the count is the mailbox's.
            address = "Victim@Example.org" if m else VICTIM
            assert await _post(api, form_id, address, f"198.51.100.{n * 2 + m + 100}") == 303
    await mailing.run()

    assert len(inbox.messages) == 3


async def test_the_spellings_of_one_mailbox_are_counted_as_one(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox
) -> None:
    form_id, _, _ = await _form(session)
    spellings = [
        "victim@example.org",
        "victim+1@example.org",
        "v.i.c.t.i.m@example.org",
        "Victim+Two@Example.org",
        "vic.tim+3@EXAMPLE.ORG",
    ]

    for n, address in enumerate(spellings):
        assert await _post(api, form_id, address, f"198.51.100.{n + 200}") == 303
    await mailing.run()

    assert len(inbox.messages) == 3


async def test_fan_outs_racing_count_an_address_exactly(
    session: AsyncSession, engine: AsyncEngine, mailing: Mailing
) -> None:
    form_id, org_id, _ = await _form(session)
    form = await form_service.get(session, org_id, form_id)

    async def created(count: int) -> list[notification_service.Created]:
        return [
            notification_service.Created(
                org_id,
                form_id,
                (await create_submission(session, form, answers={"name": "x", "email": VICTIM})).id,
            )
            for _ in range(count)
        ]

    # A copy counted already: the day's row exists, for a racer to read.
    copies = mailing.sender.copies
    await notification_service.enqueue(session, await created(1), utcnow(), copies)
    batches = [await created(5), await created(5)]
    await session.commit()

    async with AsyncSession(engine) as first, AsyncSession(engine) as second:
        await notification_service.enqueue(first, batches[0], utcnow(), copies)

        async def then_second() -> None:
            await notification_service.enqueue(second, batches[1], utcnow(), copies)
            await second.commit()

        if engine.dialect.name == "postgresql":
            racing = asyncio.create_task(then_second())
            await statement_waiting_on_a_lock(engine)  # on the first's rows, uncommitted
            await first.commit()
            await racing
        else:  # SQLite's writers take turns from BEGIN (IMMEDIATE): the second waits
            await first.commit()
            await then_second()

    statuses = [copy.status for copy in await _copies(engine, form_id)]
    assert sorted(statuses) == ["pending"] * 3 + ["skipped"] * 8


async def test_a_copy_goes_only_to_the_address_it_was_counted_for(
    api: Api, session: AsyncSession, mailing: Mailing, inbox: Inbox, engine: AsyncEngine
) -> None:
    form_id, _, secret = await _form(session)
    posted = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "email": "ada@example.net"}},
    )
    await mailing.worker.dispatch()  # counted for ada@example.net

    changed = await api.patch(
        posted.headers["location"],
        secret,
        json={"answers": {"email": VICTIM}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    await mailing.sender.drain()

    [copy] = await _copies(engine, form_id)
    assert changed.status_code == 200, changed.text
    assert inbox.messages == []
    assert copy.status == "skipped"
    assert copy.last_error == "the address is not the one the copy was counted for"


async def test_copies_cannot_be_turned_on_without_the_key_that_counts_them(
    session: AsyncSession,
) -> None:
    org = await create_org(session)
    form = await create_form(session, org, blocks=BLOCKS)

    with pytest.raises(BadRequest, match="needs FORMSAPI_SECRET_KEY"):
        await notification_service.update(
            session, org.id, form.id, {}, "email", utcnow(), keyed=False
        )
    assert (await notification_service.settings(session, org.id, form.id)).copy_question is None


async def test_a_days_counts_go_once_the_day_is_over(
    api: Api, session: AsyncSession, mailing: Mailing, engine: AsyncEngine
) -> None:
    form_id, _, _ = await _form(session)
    assert await _post(api, form_id, VICTIM, "198.51.100.1") == 303
    await mailing.run()
    sessionmaker = async_sessionmaker(engine)

    kept = await purge_copy_counts(sessionmaker)
    with shift(timedelta(days=1)):
        purged = await purge_copy_counts(sessionmaker)

    async with AsyncSession(engine) as reader:
        left = await reader.scalar(unscoped(select(func.count()).select_from(CopyCount), "test"))
    assert (kept, purged, left) == (0, 2, 0)  # the address's count and the form's
