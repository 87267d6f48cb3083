"""The sender killed mid-send loses no mail and sends none twice beyond the
one documented window.

`formsapi worker` runs as a real process against a real SMTP server on
loopback that holds every conversation at its end of DATA; the worker is
killed with SIGKILL while it waits for the server's answers. Of the mails
held, the server keeps half (accepted, the answer lost with the process:
the window where a resend is a duplicate, recognisable by its Message-ID)
and refuses the other half once released. A second worker then sends
everything: every mail arrives, the refused ones exactly once, and only the
kept ones twice. A sender that marked mails sent before the server accepted
them would lose the refused half; one that resent what it had marked would
send others twice."""

import asyncio
import email
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from email.policy import default
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from formsapi.db.engine import create_engine
from formsapi.db.session import create_sessionmaker
from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.member import service as member_service
from formsapi.models import MailOutbox
from formsapi.notification import service as notification_service
from formsapi.notification.message import message_id
from formsapi.tenancy import unscoped
from tests.support.factories import create_submission, create_user
from tests.support.mail import Inbox, smtp_server
from tests.support.servers import Process, clean_env, command
from tests.support.shared_database import Setup, shared_database, tenant

MAILS = 12


@dataclass
class HoldingInbox(Inbox):
    """Holds each conversation at the end of DATA while `holding`, having
    kept every other held mail (accepted) and not the rest (to be refused)."""

    holding: bool = True
    held: list[Message] = field(default_factory=list)
    kept_held: list[str] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if not self.holding:
            return await super().handle_DATA(server, session, envelope)
        message = email.message_from_bytes(envelope.content, policy=default)
        self.held.append(message)
        keep = len(self.held) % 2 == 1
        if keep:  # the server has it; the answer is what the sender waits for
            self.kept_held.append(str(message["Message-ID"]))
            self.messages.append(message)
        while self.holding:  # noqa: ASYNC110 - set from the test's thread, not this loop
            await asyncio.sleep(0.02)
        return "250 Message accepted for delivery" if keep else "451 try again later"


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    with shared_database(request, tmp_path) as url:
        yield asyncio.run(tenant(url, forms=1))


async def _queue(setup: Setup) -> list[str]:
    """MAILS submissions, each to be mailed to a member: the mails' Message-IDs."""
    engine = create_engine(setup.database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            member = await create_user(session)
            await member_service.add_directly(session, setup.organization_id, member, "viewer")
            form = await form_service.get(session, setup.organization_id, setup.forms[0])
            await notification_service.update(
                session, form.organization_id, form.id, {member.id: "each"}, None, utcnow()
            )
            created = [
                notification_service.Created(
                    form.organization_id, form.id, (await create_submission(session, form)).id
                )
                for _ in range(MAILS)
            ]
            copies = notification_service.CopyRules(None, 0, 0)  # members' mail only
            await notification_service.enqueue(session, created, utcnow(), copies)
            await session.commit()
            statement = unscoped(select(MailOutbox.id), "the test")
            return [message_id(id_) for id_ in await session.scalars(statement)]
    finally:
        await engine.dispose()


async def _statuses(setup: Setup) -> Counter[str]:
    engine = create_engine(setup.database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            statement = unscoped(select(MailOutbox.status), "the test")
            return Counter(await session.scalars(statement))
    finally:
        await engine.dispose()


def _worker(setup: Setup, smtp_url: str, tmp_path: Path, name: str) -> Process:
    env = clean_env(
        database_url=setup.database_url,
        smtp_url=f"{smtp_url}?timeout=1",
        secret_key="c" * 32,
        public_url="https://forms.example.com",
    )
    return command(tmp_path, env, name, "worker")


def _wait(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_sender_killed_mid_send_loses_no_mail_and_repeats_only_what_was_accepted(
    setup: Setup, tmp_path: Path
) -> None:
    expected = asyncio.run(_queue(setup))
    inbox = HoldingInbox()
    with smtp_server(inbox=inbox) as (url, _):
        first = _worker(setup, url, tmp_path, "first")
        try:
            _wait(lambda: len(inbox.held) >= 2, 30, "the first sender never reached DATA")
            time.sleep(0.3)  # every conversation it started is held
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
        finally:
            first.kill()
        held = [str(m["Message-ID"]) for m in inbox.held]
        inbox.holding = False

        second = _worker(setup, url, tmp_path, "second")
        try:
            # The killed sender's claims come due when their lease runs out.
            _wait(
                lambda: set(expected) <= {str(m["Message-ID"]) for m in inbox.messages},
                60,
                "some mail never arrived",
            )
            time.sleep(0.5)  # nothing more is coming
            second.send_signal(signal.SIGTERM)
            assert second.wait(30) == 0
        finally:
            second.kill()
    received = Counter(str(m["Message-ID"]) for m in inbox.messages)
    refused = set(held) - set(inbox.kept_held)

    assert set(received) == set(expected)
    assert {mid for mid, count in received.items() if count > 1} <= set(inbox.kept_held)
    assert max(received.values()) <= 2
    assert all(received[mid] == 1 for mid in refused)  # resent once, by the second sender
    assert refused  # the test held something it refused: it could have lost it
    assert asyncio.run(_statuses(setup)) == Counter({"sent": MAILS})
