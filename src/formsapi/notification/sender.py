"""The mail sender: claims due mails of the outbox, sends them, and marks
each sent once the SMTP server accepted it.

It runs beside the webhook worker (`formsapi worker`, or `formsapi serve` on
SQLite), and any number of senders share the outbox, as webhook workers
share theirs: a claim leases mails (PostgreSQL skips rows another sender is
claiming), and a lease that runs out, its sender killed, makes them due
again. An outcome is written only while the claim's lease is still on the
row, so a sender that outlived its lease cannot overwrite another's.

A mail is marked sent in a transaction of its own the moment the server
accepts it: a crash between the two is the one way a mail goes twice, and
then with the same Message-ID (its outbox row's id). A server that is down
or answers 4xx is tried again later and later (exponential backoff, up to
MAX_DELAY, until GIVE_UP); a 5xx refusal is final."""

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.errors import unreachable
from formsapi.db.session import session_scope
from formsapi.kit.backoff import Outage, doubling, woken
from formsapi.kit.mail import Mailer, MailNotSent
from formsapi.kit.time import monotonic, utcnow
from formsapi.models import EventType, MailStatus
from formsapi.notification import repository, service
from formsapi.notification.repository import ClaimedMail
from formsapi.webhook.repository import OutboxEvent
from formsapi.webhook.worker import FanOut

log = logging.getLogger("formsapi.mail")

BATCH = 20  # mails a claim takes
CONCURRENCY = 4  # SMTP conversations at once
IDLE_POLL = 1.0  # seconds between looks when nothing was due (a fan-out wakes it sooner)
DIGESTS_EVERY = 60.0  # seconds between looks for a day's digests to write
FIRST_DELAY = 30.0  # seconds before the second attempt; doubling after each
MAX_DELAY = 3600.0
GIVE_UP = timedelta(days=2)
# An SMTP conversation is a handful of exchanges, each within the server's
# timeout (FORMSAPI_SMTP_URL's `timeout`): the whole gets this many.
EXCHANGES = 6


def next_delay(attempts: int, rng: random.Random) -> float:
    """The wait after the `attempts`-th failed attempt, with jitter so that
    senders retrying a server that came back do not all knock at once."""
    return doubling(attempts, FIRST_DELAY, MAX_DELAY, rng)


class Sender:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        mailer: Mailer,
        public_url: str,
        copies: service.CopyRules,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.mailer = mailer
        self.public_url = public_url
        self.copies = copies
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not a secret
        self.budget = mailer.timeout * EXCHANGES
        # Longer than a send can take: a lease that runs out means its sender died.
        self.lease = timedelta(seconds=self.budget + 5)
        self.digests_at: float | None = None
        self.held: dict[str, ClaimedMail] = {}
        self.wake = asyncio.Event()

    async def digests(self) -> int:
        """Write the last day's digests, now and then (idempotent)."""
        if self.digests_at is not None and monotonic() - self.digests_at < DIGESTS_EVERY:
            return 0
        async with session_scope(self.sessionmaker) as session:
            written = await service.enqueue_digests(session, utcnow())
        self.digests_at = monotonic()
        return written

    async def step(self) -> int:
        """Claim what is due and send it; how many mails were claimed."""
        await self.digests()
        now = utcnow()
        async with session_scope(self.sessionmaker) as session:
            claimed = await repository.claim(session, now, now + self.lease, BATCH)
        if not claimed:
            return 0
        self.held.update((mail.id, mail) for mail in claimed)
        slots = asyncio.Semaphore(CONCURRENCY)

        async def send(mail: ClaimedMail) -> None:
            async with slots:
                await self._send(mail)

        await asyncio.gather(*(send(mail) for mail in claimed))
        return len(claimed)

    async def _send(self, mail: ClaimedMail) -> None:
        try:
            async with self.sessionmaker() as session:
                message = await service.compose(
                    session, mail, self.mailer.sender, self.public_url, self.copies
                )
        except service.Skip as why:
            await self._finish(mail, MailStatus.skipped, error=str(why))
            return
        except ValueError:  # a header the message cannot carry: never sendable
            await self._finish(mail, MailStatus.failed, error="not a valid mail header")
            return
        except Exception as error:  # a bug or the database: tried again later
            log.exception("mail %s could not be composed", mail.id)
            await self._retry(mail, f"internal error: {type(error).__name__}")
            return
        try:
            async with asyncio.timeout(self.budget):
                await self.mailer.deliver(message)
        except MailNotSent as error:
            if error.permanent:
                await self._finish(mail, MailStatus.failed, error=str(error))
            else:
                await self._retry(mail, str(error))
            return
        except TimeoutError:
            await self._retry(mail, "timed out")
            return
        await self._finish(mail, MailStatus.sent)

    async def _retry(self, mail: ClaimedMail, error: str) -> None:
        at = utcnow()
        if at - mail.created_at >= GIVE_UP:
            await self._finish(mail, MailStatus.failed, error=f"gave up: {error}")
            return
        delay = next_delay(mail.attempts + 1, self.rng)
        await self._finish(
            mail, MailStatus.pending, error=error, next_attempt_at=at + timedelta(seconds=delay)
        )

    async def _finish(
        self,
        mail: ClaimedMail,
        status: MailStatus,
        *,
        error: str | None = None,
        next_attempt_at: datetime | None = None,
    ) -> None:
        """Write the outcome at once. A database that cannot take it is
        asked again while the lease lasts: a sent mail left unmarked would
        go again once its lease runs out."""
        deadline = monotonic() + self.lease.total_seconds() / 2
        while True:
            try:
                async with session_scope(self.sessionmaker) as session:
                    await repository.finish(
                        session,
                        mail,
                        status,
                        utcnow(),
                        next_attempt_at=next_attempt_at,
                        error=error[:200] if error else None,
                    )
                break
            except Exception:
                if monotonic() >= deadline:
                    raise
                log.warning("mail %s: its outcome could not be written yet", mail.id)
                await asyncio.sleep(0.5)
        self.held.pop(mail.id, None)

    async def drain(self) -> None:
        """Send until nothing is due: for tests and one-shot runs."""
        while await self.step():
            pass

    async def run(self, stop: asyncio.Event, grace: float) -> None:
        """Send until `stop` is set; then give sends in flight `grace`
        seconds to finish, and hand back what they did not."""
        outage = Outage()
        while not stop.is_set():
            self.wake.clear()
            stepping = asyncio.ensure_future(self.step())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait([stepping, stopped], return_when=asyncio.FIRST_COMPLETED)
            if not stepping.done():
                await asyncio.wait([stepping], timeout=grace)
            stopped.cancel()
            if not stepping.done():
                stepping.cancel()
                await asyncio.gather(stepping, return_exceptions=True)
                break
            try:
                work = stepping.result()
                outage.passed()
            except Exception as error:
                log.exception("mail sender step failed; retrying")
                work = 0
                if unreachable(error):  # the database is away: ask it less and less often
                    await outage.wait()
            if not work and not stop.is_set():
                await woken(self.wake, stop, within=IDLE_POLL)
        await self.release()

    async def release(self) -> None:
        """Hand back mails claimed and not finished: due at once for the next claim."""
        held, self.held = list(self.held.values()), {}
        if held:
            async with session_scope(self.sessionmaker) as session:
                await repository.release(session, held)


def fan_out(sender: Sender) -> FanOut:
    """What the webhook fan-out calls with the events it takes off the event
    outbox: the mails of new submissions, written in its transaction; the
    sender is woken once that commits."""

    async def enqueue(
        session: AsyncSession, events: Sequence[OutboxEvent]
    ) -> Callable[[], None] | None:
        created = [
            service.Created(event.organization_id, event.form_id, event.subject_id)
            for event in events
            if event.type == EventType.submission_created
            and event.form_id is not None
            and event.subject_id is not None
        ]
        written = await service.enqueue(session, created, utcnow(), sender.copies)
        return sender.wake.set if written else None

    return enqueue
