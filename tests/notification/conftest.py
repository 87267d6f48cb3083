"""The mail server on loopback, and the fan-out and sender as `formsapi
worker` runs them, for each file's own settings (a `settings` fixture
naming the SMTP server on `port`)."""

import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from formsapi.config import Settings
from formsapi.kit.mail import Mailer
from formsapi.kit.secretbox import SecretBox
from formsapi.notification.sender import Sender, fan_out
from formsapi.notification.service import CopyRules
from formsapi.webhook.worker import Worker
from tests.support.mail import Inbox, free_port, smtp_server

PUBLIC = "https://forms.example.com"
SECRET_KEY = "k" * 32


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def settings(database_url: str, port: int) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        smtp_url=f"smtp://127.0.0.1:{port}?timeout=2",
        public_url=PUBLIC,
    )


@pytest.fixture
def inbox(port: int) -> Iterator[Inbox]:
    with smtp_server(port) as (_, inbox):
        yield inbox


@dataclass
class Mailing:
    """The fan-out and the sender, as `formsapi worker` runs them."""

    worker: Worker
    sender: Sender

    async def run(self) -> None:
        await self.worker.dispatch()
        await self.sender.drain()


@pytest.fixture
async def mailing(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Mailing]:
    sessionmaker = async_sessionmaker(engine, expire_on_commit=False)
    mailer = Mailer(settings.smtp_url, settings.smtp_from)
    copies = CopyRules.of(settings, SecretBox([SECRET_KEY]))
    sender = Sender(sessionmaker, mailer, PUBLIC, copies, rng=random.Random(1))  # noqa: S311
    worker = Worker(sessionmaker, settings, None, fan_out=fan_out(sender))
    yield Mailing(worker, sender)
    await worker.close()
