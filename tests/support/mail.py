"""A real SMTP server on loopback (aiosmtpd, in a thread of its own) that keeps
what it receives, for tests of what the service mails."""

import email
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from email.policy import default
from typing import Any

from aiosmtpd.controller import Controller


@dataclass
class Inbox:
    messages: list[Message] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)  # each message's envelope
    refuse: bool = False  # answer every recipient with 550

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.refuse:
            return "550 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.content, policy=default))
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[Message]:
        return [m for m in self.messages if m["To"] == address]

    def link_in(self, message: Message) -> str:
        body = message.get_payload(decode=True)
        assert isinstance(body, bytes)
        match = re.search(r"https?://\S+", body.decode())
        assert match, body
        return match.group(0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def smtp_server(port: int | None = None, inbox: Inbox | None = None) -> Iterator[tuple[str, Inbox]]:
    """An SMTP URL and the inbox behind it (on `port`, when given: a server
    that comes back where it was)."""
    inbox = inbox or Inbox()
    port = port or free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{port}", inbox
    finally:
        controller.stop()
