"""The webhook worker: fans new events out to the endpoints that want them,
claims due deliveries, sends them, and records what came of each.

Every step is a short transaction, so any number of workers share the work
and any of them may die: fan-out takes events off the event outbox in the
transaction that writes their deliveries; a claim leases deliveries
(PostgreSQL skips rows another worker is claiming), and a lease that runs
out makes them due again. A claim is not an attempt: a delivery counts the
attempts in its log, and its worker's outcome is written only if no other
attempt was recorded since the claim (its lease ran out and another worker
took it over). Delivery is therefore at least once, across crashes of
either side.

Organizations share a worker fairly. Claims take a bounded number of each
organization's due deliveries, each organization's first ones first; claimed
deliveries wait in a queue per organization and endpoint, and a free slot
goes to the organizations in turn, each within its own share of the slots
(webhook_organization_concurrency) and each endpoint within its own. An
organization whose receivers hang holds only its share: another's delivery
finds a free slot at once. An endpoint whose last attempt timed out gets one
slot until it answers again."""

import asyncio
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.db.errors import unreachable
from formsapi.db.session import create_read_sessionmaker, session_scope
from formsapi.event import service as event_service
from formsapi.kit import egress
from formsapi.kit.backoff import Outage, woken
from formsapi.kit.ids import new_id
from formsapi.kit.secretbox import SecretBox, SecretBoxError
from formsapi.kit.time import isoformat_z, monotonic, utcnow
from formsapi.models import DeliveryStatus, EventType, WebhookEndpoint, WebhookSubscription
from formsapi.webhook import delivery, repository
from formsapi.webhook.delivery import Outcome
from formsapi.webhook.repository import DeliveryOutcome, EventBody, OutboxEvent
from formsapi.webhook.service import disabled_event_data, egress_policy

log = logging.getLogger("formsapi.webhooks")

FAN_OUT_BATCH = 1000  # events a round of fan-out looks at
FAN_OUT_ROWS = 5000  # deliveries it writes at most
IDLE_POLL = 0.05  # seconds between looks at the outbox when there is nothing to do
# A worker beside the API (FORMSAPI_WEBHOOK_WORKER) is woken by its own
# process's events as they commit: idle, it looks less and less often, up to
# this, for what other processes wrote and for retries come due.
WOKEN_IDLE_POLL = 1.0
# After a round that found a little work, wait this long before the next, so
# that under a steady trickle each round's statements carry several events
# rather than one: less CPU an event for the database and the API beside it.
PACE = 0.05
# Claims run ahead of sends, this many per sending slot: a round of the loop
# (a claim, a flush: a few statements) is then paid by many deliveries.
QUEUED = 16
# Outcomes are written this many at a time, or after this many seconds.
FLUSH_AT = 64
FLUSH_EVERY = 0.025
DISABLE_AFTER = timedelta(days=5)
# A delivery that waited longer than this for its slot reads its event and
# endpoint again before it is sent: the answers may have been erased, the
# endpoint disabled or moved, meanwhile. (One sent at once was read just before.)
FRESH = 0.1


@dataclass(frozen=True, slots=True)
class Claimed:
    delivery_id: str
    organization_id: str
    endpoint_id: str
    event_seq: int
    event_id: str
    attempts: int  # made before this claim; this one's, if it is made, is the next


@dataclass(slots=True)
class Waiting:
    """A claimed delivery waiting for a slot, with what it sends."""

    claimed: Claimed
    event: EventBody | None
    endpoint: WebhookEndpoint | None
    read_at: float = field(default_factory=monotonic)


@dataclass(frozen=True, slots=True)
class Finished:
    """A claim done with, its outcome waiting to be written."""

    claimed: Claimed
    result: delivery.Result
    at: datetime


# What else is derived from the events taken off the event outbox, in the
# transaction that takes them (the mail outbox's rows: notification/sender.py);
# it returns what to call once that transaction has committed, if anything.
FanOut = Callable[[AsyncSession, Sequence[OutboxEvent]], Awaitable[Callable[[], None] | None]]


class Worker:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        settings: Settings,
        box: SecretBox | None,
        *,
        rng: random.Random | None = None,
        woken: bool = False,
        fan_out: FanOut | None = None,
    ) -> None:
        """Without a `box` (no FORMSAPI_SECRET_KEY) nothing is sent: events
        are fanned out (their deliveries wait for a worker with the key), for
        `fan_out` to see them."""
        self.sessionmaker = sessionmaker
        self.fan_out = fan_out
        # Idle, the wait before the next look; it grows to WOKEN_IDLE_POLL
        # when commits in this process wake the worker (`woken`).
        self.idle_poll = IDLE_POLL
        self.idle_poll_max = WOKEN_IDLE_POLL if woken else IDLE_POLL
        # Reads run a statement each, in autocommit: no BEGIN and ROLLBACK around them.
        engine = sessionmaker.kw["bind"]
        self.reader = create_read_sessionmaker(engine)
        self.settings = settings
        self.box = box
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not a secret
        self.timeout = settings.webhook_timeout
        # Longer than one attempt can take, and renewed while its delivery
        # waits for a slot: a lease that runs out means its worker died.
        self.lease = timedelta(seconds=self.timeout + 5)
        # The service's clock, as leases are: a shifted clock renews sooner.
        self.renewed_at = monotonic()
        self.slots = settings.webhook_concurrency
        self.organization_slots = min(settings.webhook_organization_concurrency, self.slots)
        self.endpoint_slots = min(settings.webhook_endpoint_concurrency, self.organization_slots)
        self.client = egress.Client(egress_policy(settings), limit=self.slots)
        # Claimed, waiting or being sent (leases renewed), by delivery id.
        self.in_flight: dict[str, Claimed] = {}
        self.claimed_per_endpoint: Counter[str] = Counter()
        self.claimed_per_organization: Counter[str] = Counter()
        # Waiting for a slot: organization -> endpoint -> deliveries, and
        # the organizations with something waiting, in the order of their turns.
        self.waiting: dict[str, dict[str, deque[Waiting]]] = {}
        self.turns: deque[str] = deque()
        self.sending_per_endpoint: Counter[str] = Counter()
        self.sending_per_organization: Counter[str] = Counter()
        self.slow: set[str] = set()  # endpoints whose last attempt timed out
        self.stopping = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.results: list[Finished] = []
        self.first_result_at = 0.0
        self.wake = asyncio.Event()
        self._secrets: dict[str, str] = {}

    async def close(self) -> None:
        await self.client.close()

    # Fan-out.

    async def dispatch(self) -> int:
        """One delivery per enabled endpoint that wanted each new event when
        it happened (its subscription then); how many events were taken off
        the outbox. A round writes at most FAN_OUT_ROWS deliveries (and all
        of one event's), so an organization with many endpoints never holds
        SQLite's write lock for long."""
        async with self.reader() as reader:
            if not await repository.outbox_waiting(reader):
                return 0
        async with session_scope(self.sessionmaker) as session:
            seqs, events = await repository.outbox_events(session, FAN_OUT_BATCH)
            if not seqs:
                return 0
            organizations = sorted({event.organization_id for event in events})
            endpoints: dict[str, list[str]] = {}
            for endpoint in await repository.enabled_endpoints(session, organizations):
                endpoints.setdefault(endpoint.organization_id, []).append(endpoint.id)
            periods: dict[str, list[WebhookSubscription]] = {}
            if endpoints and events:
                oldest = min(event.occurred_at for event in events)
                every = sorted(e for ids in endpoints.values() for e in ids)
                for period in await repository.periods_of(session, every, oldest):
                    periods.setdefault(period.endpoint_id, []).append(period)
            now = utcnow()
            rows: list[dict[str, Any]] = []
            # Events no longer kept (purged before a worker ran) are done with.
            taken = sorted(set(seqs) - {event.seq for event in events})
            taken_events: list[OutboxEvent] = []
            for event in events:
                wanting = [
                    endpoint_id
                    for endpoint_id in endpoints.get(event.organization_id, ())
                    if event.type != EventType.ping
                    and any(
                        repository.wanted(period, event.type, event.form_id, event.occurred_at)
                        for period in periods.get(endpoint_id, ())
                    )
                ]
                if rows and len(rows) + len(wanting) > FAN_OUT_ROWS:
                    break  # the rest stays in the outbox for the next round
                rows += [_delivery_row(event, endpoint_id, now) for endpoint_id in wanting]
                taken.append(event.seq)
                taken_events.append(event)
            await repository.take_off_outbox(session, taken)
            await repository.add_deliveries(session, rows)
            committed = await self.fan_out(session, taken_events) if self.fan_out else None
        if committed is not None:
            committed()
        if rows:
            self.wake.set()
        return len(taken)

    # Claims.

    def _endpoint_cap(self, endpoint_id: str) -> int:
        return 1 if endpoint_id in self.slow else self.endpoint_slots

    async def claim(self) -> int:
        """Lease what is due, within this worker's room in all, per
        organization and per endpoint, and queue it for a slot; how many
        were claimed."""
        room = self.slots * QUEUED - len(self.in_flight)
        if room <= 0 or self.box is None:
            return 0
        per_endpoint = self.endpoint_slots * QUEUED
        per_organization = self.organization_slots * QUEUED
        now = utcnow()
        async with self.reader() as reader:
            candidates = await repository.due_candidates(
                reader, now, per_endpoint, per_organization, room * 2
            )
        picked: list[str] = []
        taken: Counter[str] = Counter()
        for candidate in candidates:
            if candidate.id in self.in_flight:
                continue  # its lease ran out while it waited here: it is ours still
            endpoint_id, organization_id = candidate.endpoint_id, candidate.organization_id
            endpoint_room = self._endpoint_cap(endpoint_id) * QUEUED
            if (
                len(picked) < room
                and self.claimed_per_endpoint[endpoint_id] + taken[endpoint_id] < endpoint_room
                and self.claimed_per_organization[organization_id] + taken[organization_id]
                < per_organization
            ):
                picked.append(candidate.id)
                taken[endpoint_id] += 1
                taken[organization_id] += 1
        if not picked:
            return 0
        async with session_scope(self.sessionmaker) as session:
            rows = await repository.claim(session, picked, now, now + self.lease)
        claimed = [
            Claimed(
                delivery_id=row.id,
                organization_id=row.organization_id,
                endpoint_id=row.endpoint_id,
                event_seq=row.event_seq,
                event_id=row.event_id,
                attempts=row.attempts,
            )
            for row in rows
        ]
        if claimed:
            await self._queue(claimed)
        return len(claimed)

    async def _read(
        self, claimed: Sequence[Claimed]
    ) -> tuple[dict[int, EventBody], dict[str, WebhookEndpoint]]:
        """The events and endpoints these deliveries send, as they are now."""
        async with self.reader() as reader:
            events = {
                event.seq: event
                for event in await repository.events_by_seq(reader, [c.event_seq for c in claimed])
            }
            endpoints = {
                endpoint.id: endpoint
                for endpoint in await repository.endpoints_by_id(
                    reader, sorted({c.endpoint_id for c in claimed})
                )
            }
        return events, endpoints

    async def _queue(self, claimed: list[Claimed]) -> None:
        events, endpoints = await self._read(claimed)
        for item in claimed:
            self.in_flight[item.delivery_id] = item
            self.claimed_per_endpoint[item.endpoint_id] += 1
            self.claimed_per_organization[item.organization_id] += 1
            queues = self.waiting.get(item.organization_id)
            if queues is None:
                queues = self.waiting[item.organization_id] = {}
                self.turns.append(item.organization_id)
            queues.setdefault(item.endpoint_id, deque()).append(
                Waiting(item, events.get(item.event_seq), endpoints.get(item.endpoint_id))
            )
        self._start_ready()

    # Slots.

    def _start_ready(self) -> None:
        """Start waiting deliveries while slots are free: the organizations
        in turn, one delivery a turn, each within its share."""
        passed = 0  # turns in a row that started nothing
        while not self.stopping and len(self.tasks) < self.slots and passed < len(self.turns):
            organization_id = self.turns[0]
            self.turns.rotate(-1)
            waiting = self._next_of(organization_id)
            if waiting is None:
                passed += 1
                continue
            passed = 0
            self._launch(waiting)

    def _next_of(self, organization_id: str) -> Waiting | None:
        """The organization's next delivery that may start now, its
        endpoints in turn; None if its share or its endpoints' are in use."""
        if self.sending_per_organization[organization_id] >= self.organization_slots:
            return None
        queues = self.waiting[organization_id]
        for endpoint_id, queue in queues.items():
            if self.sending_per_endpoint[endpoint_id] < self._endpoint_cap(endpoint_id):
                waiting = queue.popleft()
                del queues[endpoint_id]
                if queue:
                    queues[endpoint_id] = queue  # to the back: the next turn starts another's
                elif not queues:
                    del self.waiting[organization_id]
                    self.turns.remove(organization_id)
                return waiting
        return None

    def _launch(self, waiting: Waiting) -> None:
        item = waiting.claimed
        self.sending_per_endpoint[item.endpoint_id] += 1
        self.sending_per_organization[item.organization_id] += 1
        task = asyncio.create_task(self._attempt(waiting))
        self.tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: "asyncio.Task[None]") -> None:
        self.tasks.discard(task)
        self._start_ready()

    async def _attempt(self, waiting: Waiting) -> None:
        item = waiting.claimed
        try:
            if monotonic() - waiting.read_at > FRESH:
                events, endpoints = await self._read([item])
                waiting.event = events.get(item.event_seq)
                waiting.endpoint = endpoints.get(item.endpoint_id)
            result = await self._try(item, waiting.event, waiting.endpoint)
        except Exception as error:  # a bug must not lose the delivery: it is retried
            log.exception("webhook delivery %s failed unexpectedly", item.delivery_id)
            result = delivery.Result(
                Outcome.failed, error=f"internal error: {type(error).__name__}"
            )
        finally:
            self._free(item)
        if result.timed_out:
            if len(self.slow) > 10_000:
                self.slow.clear()
            self.slow.add(item.endpoint_id)
        elif result.outcome is not Outcome.endpoint_disabled:
            self.slow.discard(item.endpoint_id)
        if not self.results:
            self.first_result_at = time.monotonic()
        self.results.append(Finished(item, result, utcnow()))
        if len(self.results) >= FLUSH_AT or not self.in_flight:
            self.wake.set()

    def _free(self, item: Claimed) -> None:
        """The delivery's slot and claim are given up, whatever came of it."""
        self.in_flight.pop(item.delivery_id, None)
        for counter, key in (
            (self.claimed_per_endpoint, item.endpoint_id),
            (self.claimed_per_organization, item.organization_id),
            (self.sending_per_endpoint, item.endpoint_id),
            (self.sending_per_organization, item.organization_id),
        ):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    async def _try(
        self,
        item: Claimed,
        event: EventBody | None,
        endpoint: WebhookEndpoint | None,
    ) -> delivery.Result:
        if endpoint is None or not endpoint.enabled:
            return delivery.skipped(Outcome.endpoint_disabled)
        if event is None:
            return delivery.skipped(Outcome.event_gone)
        payload = delivery.body(event.type, isoformat_z(event.occurred_at), event.data)
        now = utcnow()
        try:
            secrets = self._secrets_of(endpoint, now)
        except SecretBoxError as error:
            return delivery.Result(Outcome.failed, error=str(error))
        headers = delivery.headers(item.event_id, payload, secrets, now)
        return await delivery.attempt(self.client, endpoint.url, payload, headers, self.timeout)

    def _secrets_of(self, endpoint: WebhookEndpoint, now: datetime) -> list[str]:
        sealed = [endpoint.secret]
        until = endpoint.previous_secret_until
        if endpoint.previous_secret and until is not None and until > now:
            sealed.append(endpoint.previous_secret)
        opened = []
        for text in sealed:
            if text not in self._secrets:
                if len(self._secrets) > 10_000:
                    self._secrets.clear()
                if self.box is None:  # never claimed without one: see claim()
                    raise SecretBoxError("FORMSAPI_SECRET_KEY is not set")
                self._secrets[text] = self.box.open(text)
            opened.append(self._secrets[text])
        return opened

    # Outcomes.

    def flush_due(self) -> bool:
        return bool(self.results) and (
            len(self.results) >= FLUSH_AT
            or not self.in_flight
            or time.monotonic() - self.first_result_at >= FLUSH_EVERY
        )

    async def flush(self) -> int:
        """Write what the attempts finished since the last flush came to, in
        one transaction; how many."""
        if not self.results:
            return 0
        results, self.results = self.results, []
        try:
            return await self._record(results)
        except Exception:
            self.results = results + self.results  # written by the next flush
            raise

    async def _record(self, results: list[Finished]) -> int:
        schedule = self.settings.webhook_retry_schedule
        outcomes: list[DeliveryOutcome] = []
        attempts: list[dict[str, Any]] = []
        succeeded: set[str] = set()
        failed: dict[str, datetime] = {}
        disable: dict[str, str] = {}
        for finished in results:
            item, result, at = finished.claimed, finished.result, finished.at
            status, next_at = DeliveryStatus.succeeded, at
            if result.outcome is Outcome.delivered:
                succeeded.add(item.endpoint_id)
            else:
                delay = None
                if result.outcome is Outcome.failed:
                    delay = next_delay_of(item, schedule, result, self.rng)
                status = DeliveryStatus.failed if delay is None else DeliveryStatus.pending
                next_at = at if delay is None else at + timedelta(seconds=delay)
                # Nothing went to a disabled endpoint: it did not fail.
                if result.outcome is not Outcome.endpoint_disabled:
                    failed[item.endpoint_id] = at
                if result.disable:
                    disable[item.endpoint_id] = result.disable
            outcomes.append(
                DeliveryOutcome(
                    delivery_id=item.delivery_id,
                    claimed_attempts=item.attempts,
                    tried=result.tried,
                    status=status,
                    next_attempt_at=next_at,
                    last_attempt_at=at,
                    last_status_code=result.status_code,
                    last_error=result.error,
                )
            )
            if result.tried:
                attempts.append(
                    {
                        "id": new_id("wha"),
                        "organization_id": item.organization_id,
                        "delivery_id": item.delivery_id,
                        "attempted_at": at,
                        "duration_ms": result.duration_ms,
                        "status_code": result.status_code,
                        "response_body": result.response_body,
                        "error": result.error,
                    }
                )
        async with session_scope(self.sessionmaker) as session:
            # A delivery deleted meanwhile (its endpoint removed) has no log to
            # add to; held endpoints keep the rest from going before commit.
            await repository.hold_endpoints(
                session, sorted({f.claimed.endpoint_id for f in results})
            )
            kept = await repository.existing_deliveries(session, [o.delivery_id for o in outcomes])
            attempts = [a for a in attempts if a["delivery_id"] in kept]
            await repository.record_outcomes(session, outcomes, attempts)
            await repository.endpoint_succeeded(session, sorted(succeeded))
            for endpoint_id, at in sorted(failed.items()):
                if endpoint_id in succeeded:
                    continue
                since = await repository.endpoint_failed(session, endpoint_id, at)
                if since is not None and at - since >= DISABLE_AFTER:
                    disable.setdefault(
                        endpoint_id,
                        f"Every delivery failed for {DISABLE_AFTER.days} days, since "
                        f"{isoformat_z(since)}.",
                    )
            for endpoint_id, reason in sorted(disable.items()):
                await self._disable(session, endpoint_id, reason)
        return len(results)

    async def _disable(self, session: AsyncSession, endpoint_id: str, reason: str) -> None:
        now = utcnow()
        endpoint = await repository.disable(session, endpoint_id, reason, now)
        if endpoint is None:
            return
        log.warning("webhook endpoint %s disabled: %s", endpoint_id, reason)
        await event_service.record(
            session,
            endpoint.organization_id,
            EventType.webhook_endpoint_disabled,
            now,
            disabled_event_data(endpoint),
        )

    # Loops.

    def idle(self) -> bool:
        return not (self.in_flight or self.results)

    async def renew(self) -> None:
        """Extend the leases of what this worker holds, now and then."""
        if monotonic() - self.renewed_at < self.lease.total_seconds() / 3:
            return
        held = list(self.in_flight)  # waiting for a slot or being sent
        if held:
            async with session_scope(self.sessionmaker) as session:
                await repository.renew(session, held, utcnow() + self.lease)
        self.renewed_at = monotonic()  # only once renewed: a failure tries again next round

    async def step(self, *, flush: bool = False) -> int:
        """One round of every step; how much work it found."""
        # Outcomes first: a lease must not run out while its outcome waits.
        flushed = await self.flush() if flush or self.flush_due() else 0
        await self.renew()
        dispatched = await self.dispatch()
        claimed = await self.claim()
        return dispatched + claimed + flushed

    async def drain(self) -> None:
        """Work until nothing is due or in flight: for tests and one-shot runs."""
        while True:
            busy = await self.step(flush=True)
            if self.tasks:
                await asyncio.gather(*list(self.tasks))
                continue
            if not busy and self.idle():
                return

    async def run(self, stop: asyncio.Event, grace: float) -> None:
        """Work until `stop` is set; then give attempts in flight `grace`
        seconds to finish, record them, and hand back the rest."""
        outage = Outage()
        while not stop.is_set():
            # Cleared before the look, not after: what wakes the worker while
            # it looks (a commit, a free slot) makes it look again at once.
            self.wake.clear()
            try:
                work = await self.step()
                outage.passed()
            except Exception as error:
                log.exception("webhook worker step failed; retrying")
                work = 0
                if unreachable(error):  # the database is away: ask it less and less often
                    await outage.wait()
                else:  # anything else is one step's: every organization waits for the retry
                    await asyncio.sleep(PACE)
            if work:
                self.idle_poll = IDLE_POLL
            if 0 < work < FLUSH_AT:
                await asyncio.sleep(PACE)
            elif not work:
                timeout = FLUSH_EVERY if self.results else self.idle_poll
                woke = await woken(self.wake, stop, within=timeout)
                self.idle_poll = IDLE_POLL if woke else min(self.idle_poll * 2, self.idle_poll_max)
        await self.stop(grace)

    async def stop(self, grace: float) -> None:
        self.stopping = True  # nothing more starts; what waits is handed back
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=grace)
        unfinished = {c.delivery_id: c.attempts for c in self.in_flight.values()}
        for task in list(self.tasks):
            task.cancel()
        await self.flush()
        if unfinished:
            async with session_scope(self.sessionmaker) as session:
                await repository.release(session, unfinished)
        await self.close()


def next_delay_of(
    item: Claimed, schedule: list[float], result: delivery.Result, rng: random.Random
) -> float | None:
    """The wait after this claim's attempt failed, the attempts before it and itself."""
    return delivery.next_delay(item.attempts + 1, schedule, result, rng)


def _delivery_row(event: OutboxEvent, endpoint_id: str, now: datetime) -> dict[str, Any]:
    return {
        "id": new_id("whd"),
        "organization_id": event.organization_id,
        "endpoint_id": endpoint_id,
        "event_seq": event.seq,
        "event_id": event.id,
        "event_type": event.type,
        "status": DeliveryStatus.pending.value,
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
    }
