"""The SQL of webhooks: endpoints and their logs for one organization, and
the outbox the workers share across organizations (fan-out, claims,
outcomes), which says so with `unscoped`."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    Row,
    Select,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal_column,
    null,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from formsapi.kit.ids import new_id
from formsapi.models import (
    DeliveryStatus,
    Event,
    EventOutbox,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookSubscription,
)
from formsapi.tenancy import scoped, unscoped

WORKERS = "webhook workers serve every organization"


# Endpoints and logs, for one organization.


async def get_endpoint(
    session: AsyncSession, organization_id: str, endpoint_id: str, *, for_update: bool = False
) -> WebhookEndpoint | None:
    statement = select(WebhookEndpoint).where(
        scoped(WebhookEndpoint, organization_id), WebhookEndpoint.id == endpoint_id
    )
    if for_update:
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def list_endpoints(session: AsyncSession, organization_id: str) -> Sequence[WebhookEndpoint]:
    statement = (
        select(WebhookEndpoint)
        .where(scoped(WebhookEndpoint, organization_id))
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    return (await session.scalars(statement)).all()


async def count_endpoints(session: AsyncSession, organization_id: str) -> int:
    statement = select(func.count()).where(scoped(WebhookEndpoint, organization_id))
    return int(await session.scalar(statement) or 0)


async def delete_endpoint(session: AsyncSession, organization_id: str, endpoint_id: str) -> bool:
    """The endpoint and its log; False if there was none. The endpoint's row
    is locked first, as workers lock endpoints before their deliveries: a
    worker writing to it finishes first, or waits and finds it gone."""
    if await get_endpoint(session, organization_id, endpoint_id, for_update=True) is None:
        return False
    owned = select(WebhookDelivery.id).where(
        scoped(WebhookDelivery, organization_id), WebhookDelivery.endpoint_id == endpoint_id
    )
    await session.execute(
        delete(WebhookAttempt).where(
            scoped(WebhookAttempt, organization_id), WebhookAttempt.delivery_id.in_(owned)
        )
    )
    await session.execute(
        delete(WebhookDelivery).where(
            scoped(WebhookDelivery, organization_id), WebhookDelivery.endpoint_id == endpoint_id
        )
    )
    await session.execute(
        delete(WebhookSubscription).where(
            scoped(WebhookSubscription, organization_id),
            WebhookSubscription.endpoint_id == endpoint_id,
        )
    )
    gone = await session.execute(
        delete(WebhookEndpoint).where(
            scoped(WebhookEndpoint, organization_id), WebhookEndpoint.id == endpoint_id
        )
    )
    return bool(getattr(gone, "rowcount", 0))


async def deliveries(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    offset: int,
    limit: int,
    status: str | None,
) -> tuple[Sequence[WebhookDelivery], int]:
    """A page of the endpoint's deliveries, newest first, and how many there are."""
    conditions = [
        scoped(WebhookDelivery, organization_id),
        WebhookDelivery.endpoint_id == endpoint_id,
    ]
    if status is not None:
        conditions.append(WebhookDelivery.status == status)
    rows = await session.scalars(
        select(WebhookDelivery)
        .where(*conditions)
        .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
        .offset(offset)
        .limit(limit)
    )
    total = await session.scalar(select(func.count()).where(*conditions))
    return rows.all(), int(total or 0)


async def get_delivery(
    session: AsyncSession, organization_id: str, endpoint_id: str, delivery_id: str
) -> WebhookDelivery | None:
    return await session.scalar(
        select(WebhookDelivery).where(
            scoped(WebhookDelivery, organization_id),
            WebhookDelivery.endpoint_id == endpoint_id,
            WebhookDelivery.id == delivery_id,
        )
    )


async def attempts(
    session: AsyncSession, organization_id: str, delivery_id: str
) -> Sequence[WebhookAttempt]:
    statement = (
        select(WebhookAttempt)
        .where(scoped(WebhookAttempt, organization_id), WebhookAttempt.delivery_id == delivery_id)
        .order_by(WebhookAttempt.attempted_at, WebhookAttempt.id)
    )
    return (await session.scalars(statement)).all()


async def requeue_failed(
    session: AsyncSession, organization_id: str, endpoint_id: str, since: datetime, now: datetime
) -> int:
    """Every failed delivery to the endpoint created since `since`, due again now."""
    result = await session.execute(
        update(WebhookDelivery)
        .where(
            scoped(WebhookDelivery, organization_id),
            WebhookDelivery.endpoint_id == endpoint_id,
            WebhookDelivery.status == DeliveryStatus.failed,
            WebhookDelivery.created_at >= since,
            or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now),
        )
        .execution_options(synchronize_session=False)
        .values(status=DeliveryStatus.pending, next_attempt_at=now, lease_until=None, attempts=0)
    )
    return int(getattr(result, "rowcount", 0))


async def subscribe(session: AsyncSession, endpoint: WebhookEndpoint, now: datetime) -> None:
    """End the endpoint's current subscription period, if any, and start one
    of what it wants now."""
    await session.execute(
        update(WebhookSubscription)
        .where(
            scoped(WebhookSubscription, endpoint.organization_id),
            WebhookSubscription.endpoint_id == endpoint.id,
            WebhookSubscription.ended_at.is_(None),
        )
        .values(ended_at=now)
        .execution_options(synchronize_session=False)
    )
    session.add(
        WebhookSubscription(
            id=new_id("whs"),
            organization_id=endpoint.organization_id,
            endpoint_id=endpoint.id,
            event_types=list(endpoint.event_types),
            form_ids=list(endpoint.form_ids),
            started_at=now,
        )
    )
    await session.flush()


async def subscriptions(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    since: datetime | None = None,
    limit: int | None = None,
) -> Sequence[WebhookSubscription]:
    """The endpoint's subscription periods (those that had not ended by
    `since`), newest first, `limit` at most."""
    statement = (
        select(WebhookSubscription)
        .where(
            scoped(WebhookSubscription, organization_id),
            WebhookSubscription.endpoint_id == endpoint_id,
        )
        .order_by(WebhookSubscription.started_at.desc(), WebhookSubscription.id.desc())
        .limit(limit)
    )
    if since is not None:
        statement = statement.where(
            or_(WebhookSubscription.ended_at.is_(None), WebhookSubscription.ended_at > since)
        )
    return (await session.scalars(statement)).all()


def _subscribed(period: WebhookSubscription) -> Any:
    """The events a subscription period wanted."""
    conditions = [Event.occurred_at >= period.started_at]
    if period.ended_at is not None:
        conditions.append(Event.occurred_at < period.ended_at)
    if period.event_types:
        conditions.append(Event.type.in_(period.event_types))
    if period.form_ids:
        conditions.append(or_(Event.form_id.is_(None), Event.form_id.in_(period.form_ids)))
    return and_(*conditions)


async def events_never_delivered(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    since: datetime,
    periods: Sequence[WebhookSubscription],
    limit: int,
) -> Sequence[Row[int, str, str]]:
    """Up to `limit` of the organization's events since `since` that one of
    the endpoint's subscription periods wanted when they happened, with no
    delivery to it (it was disabled): seq, id, type. Never pings, which go
    to one endpoint alone."""
    if not periods:
        return []
    delivered = (
        select(WebhookDelivery.id)
        .where(
            scoped(WebhookDelivery, organization_id),
            WebhookDelivery.endpoint_id == endpoint_id,
            WebhookDelivery.event_seq == Event.seq,
        )
        .exists()
    )
    statement = (
        select(Event.seq, Event.id, Event.type)
        .where(
            scoped(Event, organization_id),
            Event.occurred_at >= since,
            Event.type != "ping",
            or_(*[_subscribed(period) for period in periods]),
            ~delivered,
            # Not fanned out yet: its deliveries are on their way.
            ~select(EventOutbox.seq).where(EventOutbox.seq == Event.seq).exists(),
        )
        .order_by(Event.xid, Event.seq)
        .limit(limit)
    )
    return (await session.execute(statement)).all()


async def event_seq(session: AsyncSession, organization_id: str, event_id: str) -> int:
    found = await session.scalar(
        select(Event.seq).where(scoped(Event, organization_id), Event.id == event_id)
    )
    assert found is not None, "written in this transaction"
    return int(found)


async def add_deliveries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(WebhookDelivery), rows)


# The outbox, across organizations.


def _columns(entity: Any, names: Sequence[str]) -> list[Any]:
    """The entity's columns of these names, in their order: a row selected
    with them reads into a NamedTuple of the same fields by position, as
    cheaply as a tuple, without a list of columns to keep in step."""
    return [getattr(entity, name) for name in names]


class OutboxEvent(NamedTuple):
    """An event waiting to be fanned out."""

    seq: int
    xid: int
    id: str
    organization_id: str
    type: str
    form_id: str | None
    occurred_at: datetime
    subject_id: str | None = None


class EventBody(NamedTuple):
    """What a delivery of an event sends."""

    seq: int
    type: str
    occurred_at: datetime
    data: str


async def outbox_waiting(session: AsyncSession) -> bool:
    return (await session.execute(select(EventOutbox.seq).limit(1))).first() is not None


async def outbox_events(
    session: AsyncSession, limit: int
) -> tuple[Sequence[int], list[OutboxEvent]]:
    """Up to `limit` events waiting in the outbox, oldest first, held for
    this transaction (on PostgreSQL, rows another worker holds are skipped):
    their outbox seqs, and the events still kept."""
    held = select(EventOutbox.seq).order_by(EventOutbox.seq).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        held = held.with_for_update(skip_locked=True)
    seqs = (await session.scalars(held)).all()
    if not seqs:
        return [], []
    statement = unscoped(
        select(*_columns(Event, OutboxEvent._fields))
        .where(Event.seq.in_(seqs))
        .order_by(Event.seq),
        WORKERS,
    )
    return seqs, [OutboxEvent._make(row) for row in await session.execute(statement)]


async def take_off_outbox(session: AsyncSession, seqs: Sequence[int]) -> None:
    if seqs:
        await session.execute(delete(EventOutbox).where(EventOutbox.seq.in_(seqs)))


async def enabled_endpoints(
    session: AsyncSession, organization_ids: Sequence[str]
) -> Sequence[Row[str, str]]:
    """The enabled endpoints of these organizations (`id`,
    `organization_id`), held till commit for the deliveries about to be
    written to them."""
    statement = unscoped(
        _held(
            select(WebhookEndpoint.id, WebhookEndpoint.organization_id).where(
                WebhookEndpoint.organization_id.in_(organization_ids), WebhookEndpoint.enabled
            ),
            session,
        ),
        WORKERS,
    )
    return (await session.execute(statement)).all()


async def periods_of(
    session: AsyncSession, endpoint_ids: Sequence[str], since: datetime
) -> Sequence[WebhookSubscription]:
    """These endpoints' subscription periods that had not ended by `since`."""
    statement = unscoped(
        select(WebhookSubscription).where(
            WebhookSubscription.endpoint_id.in_(endpoint_ids),
            or_(WebhookSubscription.ended_at.is_(None), WebhookSubscription.ended_at > since),
        ),
        WORKERS,
    )
    return (await session.scalars(statement)).all()


def wanted(
    period: WebhookSubscription, type_: str, form_id: str | None, occurred_at: datetime
) -> bool:
    """Whether the period wanted an event: _subscribed, in Python."""
    return (
        period.started_at <= occurred_at
        and (period.ended_at is None or occurred_at < period.ended_at)
        and (not period.event_types or type_ in period.event_types)
        and (not period.form_ids or form_id is None or form_id in period.form_ids)
    )


# Written into the SQL, not bound: PostgreSQL's generic plans (which this
# service forces) use the partial indexes on pending rows only when the
# predicate is there to see.
PENDING: Any = literal_column("'pending'")


def _due(now: Any, deliveries: Any = WebhookDelivery) -> Any:
    return and_(
        deliveries.status == PENDING,
        deliveries.next_attempt_at <= now,
        or_(deliveries.lease_until.is_(None), deliveries.lease_until < now),
    )


async def due_candidates(
    session: AsyncSession, now: datetime, per_endpoint: int, per_organization: int, limit: int
) -> Sequence[Row[str, str, str]]:
    """Due deliveries, at most `per_endpoint` of each endpoint and
    `per_organization` of each organization: `id`, `endpoint_id`,
    `organization_id`.
    Each organization's oldest first, then each one's second, and so on: an
    organization with a long backlog neither crowds the others out of the
    list nor goes ahead of their older deliveries."""
    statement = _due_candidates(session.get_bind().dialect.name == "postgresql")
    parameters = {
        "now": now,
        "per_endpoint": per_endpoint,
        "per_organization": per_organization,
        "limit": limit,
    }
    return (await session.execute(statement, parameters)).all()


@cache
def _due_candidates(postgres: bool) -> Select[str, str, str]:
    """Built once: a worker looks every few milliseconds, and building the
    statement each time cost an idle server most of its CPU.

    Each endpoint's few are read from its own range of the index on pending
    rows (a LATERAL join on PostgreSQL, a correlated IN on SQLite), so a
    backlog costs nothing per look: ranking every due row instead cost
    SQLite 0.7 s a claim at 100,000 due."""
    now: Any = bindparam("now")
    columns = (
        WebhookDelivery.id,
        WebhookDelivery.endpoint_id,
        WebhookDelivery.organization_id,
        WebhookDelivery.next_attempt_at,
    )
    if postgres:
        due = (
            select(*columns)
            .where(WebhookDelivery.endpoint_id == WebhookEndpoint.id, _due(now))
            .order_by(WebhookDelivery.next_attempt_at)
            .limit(bindparam("per_endpoint"))
            .lateral("due")
        )
        per_endpoints = select(due).select_from(WebhookEndpoint).join(due, true())
    else:
        first = aliased(WebhookDelivery)
        firsts = (
            select(first.id)
            .where(first.endpoint_id == WebhookEndpoint.id, _due(now, first))
            .order_by(first.next_attempt_at)
            .limit(bindparam("per_endpoint"))
            .correlate(WebhookEndpoint)
            .scalar_subquery()
        )
        per_endpoints = (
            select(*columns)
            .select_from(WebhookEndpoint)
            .join(WebhookDelivery, WebhookDelivery.id.in_(firsts))
        )
    chosen = per_endpoints.subquery()
    ranked = select(
        chosen,
        func.row_number()
        .over(
            partition_by=chosen.c.organization_id,
            order_by=(chosen.c.next_attempt_at, chosen.c.id),
        )
        .label("turn"),
    ).subquery()
    return unscoped(
        select(ranked.c.id, ranked.c.endpoint_id, ranked.c.organization_id)
        .where(ranked.c.turn <= bindparam("per_organization"))
        .order_by(ranked.c.turn, ranked.c.next_attempt_at)
        .limit(bindparam("limit")),
        WORKERS,
    )


ClaimedRow = Row[str, str, str, int, str, int]


async def claim(
    session: AsyncSession, ids: Sequence[str], now: datetime, lease_until: datetime
) -> Sequence[ClaimedRow]:
    """Lease those of `ids` still due and free: `id`, `organization_id`,
    `endpoint_id`, `event_seq`, `event_id`, and `attempts` made so far. A
    claim is not an attempt: its worker may die before it sends, and the
    count follows the log (record_outcomes). On PostgreSQL rows another
    worker is claiming are skipped, never waited for."""
    free = select(WebhookDelivery.id).where(WebhookDelivery.id.in_(ids), _due(now))
    if session.get_bind().dialect.name == "postgresql":
        free = free.with_for_update(skip_locked=True)
    statement = unscoped(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(free.scalar_subquery()))
        .values(lease_until=lease_until)
        .returning(
            WebhookDelivery.id,
            WebhookDelivery.organization_id,
            WebhookDelivery.endpoint_id,
            WebhookDelivery.event_seq,
            WebhookDelivery.event_id,
            WebhookDelivery.attempts,
        )
        .execution_options(synchronize_session=False),
        WORKERS,
    )
    return (await session.execute(statement)).all()


async def events_by_seq(session: AsyncSession, seqs: Sequence[int]) -> list[EventBody]:
    statement = unscoped(
        select(*_columns(Event, EventBody._fields)).where(Event.seq.in_(seqs)), WORKERS
    )
    return [EventBody._make(row) for row in await session.execute(statement)]


async def endpoints_by_id(session: AsyncSession, ids: Sequence[str]) -> Sequence[WebhookEndpoint]:
    statement = unscoped(select(WebhookEndpoint).where(WebhookEndpoint.id.in_(ids)), WORKERS)
    return (await session.scalars(statement)).all()


def _held(statement: Any, session: AsyncSession) -> Any:
    """On PostgreSQL, the endpoints read are held (FOR KEY SHARE) until
    commit: deleting one (which locks it first, delete_endpoint) waits, so
    what this transaction writes about it cannot break a foreign key. Edits
    go on. SQLite's one writer holds everything anyway."""
    if session.get_bind().dialect.name == "postgresql":
        return statement.order_by(WebhookEndpoint.id).with_for_update(key_share=True)
    return statement


async def hold_endpoints(session: AsyncSession, ids: Sequence[str]) -> None:
    """Hold these endpoints (_held) before writing what came of their deliveries."""
    await session.execute(
        unscoped(
            _held(select(WebhookEndpoint.id).where(WebhookEndpoint.id.in_(ids)), session), WORKERS
        )
    )


async def existing_deliveries(session: AsyncSession, ids: Sequence[str]) -> set[str]:
    statement = unscoped(select(WebhookDelivery.id).where(WebhookDelivery.id.in_(ids)), WORKERS)
    return set((await session.scalars(statement)).all())


class DeliveryOutcome(NamedTuple):
    """A delivery's new state once a claim of it is done with."""

    delivery_id: str
    claimed_attempts: int  # its count when claimed
    tried: bool  # an attempt was made, and is logged
    status: DeliveryStatus
    next_attempt_at: datetime
    last_attempt_at: datetime
    last_status_code: int | None
    last_error: str | None


# The table, not the class: an ORM update with many parameter sets would
# want each row's primary key under its own name.
_DELIVERIES = cast(Table, WebhookDelivery.__table__)
# No attempt recorded since the claim: else its lease ran out and another
# worker took it over, whose outcome (written or still to come) stands.
_STILL_OURS = _DELIVERIES.c.attempts == bindparam("claimed_attempts")


def _if_still_ours(column: str, value: Any) -> Any:
    kept = _DELIVERIES.c[column]
    return case((_STILL_OURS, value), else_=kept)


def _new(column: str) -> Any:
    """The outcome's value for `column`, bound as that column is."""
    return _if_still_ours(column, bindparam(f"new_{column}", type_=_DELIVERIES.c[column].type))


_RECORD = unscoped(
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id == bindparam("delivery_id"))
    .values(
        # Every attempt made counts, a late one's too, so the count is the log's.
        attempts=_DELIVERIES.c.attempts + bindparam("tried"),
        status=_new("status"),
        next_attempt_at=_new("next_attempt_at"),
        lease_until=_if_still_ours("lease_until", null()),
        last_attempt_at=_new("last_attempt_at"),
        last_status_code=_new("last_status_code"),
        last_error=_new("last_error"),
    ),
    WORKERS,
)


async def record_outcomes(
    session: AsyncSession,
    outcomes: Sequence[DeliveryOutcome],
    attempt_rows: list[dict[str, Any]],
) -> None:
    """Write attempts and their deliveries' new state, one attempt counted
    for each logged. A delivery with an attempt recorded since its claim (the
    lease ran out and another worker took it over) keeps the newer state."""
    if attempt_rows:
        await session.execute(insert(WebhookAttempt), attempt_rows)
    if outcomes:
        await session.execute(
            _RECORD,
            [
                {
                    "delivery_id": outcome.delivery_id,
                    "claimed_attempts": outcome.claimed_attempts,
                    "tried": int(outcome.tried),
                    "new_status": outcome.status.value,
                    "new_next_attempt_at": outcome.next_attempt_at,
                    "new_last_attempt_at": outcome.last_attempt_at,
                    "new_last_status_code": outcome.last_status_code,
                    "new_last_error": outcome.last_error,
                }
                for outcome in outcomes
            ],
        )


async def renew(session: AsyncSession, ids: Sequence[str], lease_until: datetime) -> None:
    """Keep holding deliveries still waiting for a slot or being sent."""
    await session.execute(
        unscoped(
            update(WebhookDelivery)
            .where(WebhookDelivery.id.in_(ids), WebhookDelivery.status == PENDING)
            .values(lease_until=lease_until)
            .execution_options(synchronize_session=False),
            WORKERS,
        )
    )


async def release(session: AsyncSession, claimed: Mapping[str, int]) -> None:
    """Hand back deliveries claimed but not sent (a worker stopping), each
    with the attempts it was claimed with: due at once for the next claim,
    unless another worker took it over and recorded an attempt meanwhile."""
    for delivery_id, attempts_ in claimed.items():
        await session.execute(
            unscoped(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id, WebhookDelivery.attempts == attempts_)
                .values(lease_until=None),
                WORKERS,
            )
        )


async def endpoint_succeeded(session: AsyncSession, endpoint_ids: Sequence[str]) -> None:
    await session.execute(
        unscoped(
            update(WebhookEndpoint)
            .where(WebhookEndpoint.id.in_(endpoint_ids), WebhookEndpoint.failing_since.isnot(None))
            .values(failing_since=None),
            WORKERS,
        )
    )


async def endpoint_failed(
    session: AsyncSession, endpoint_id: str, now: datetime
) -> datetime | None:
    """Note a failure; since when the endpoint has failed everything."""
    await session.execute(
        unscoped(
            update(WebhookEndpoint)
            .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.failing_since.is_(None))
            .values(failing_since=now),
            WORKERS,
        )
    )
    found: datetime | None = await session.scalar(
        unscoped(
            select(WebhookEndpoint.failing_since).where(WebhookEndpoint.id == endpoint_id),
            WORKERS,
        )
    )
    return found


async def disable(
    session: AsyncSession, endpoint_id: str, reason: str, now: datetime
) -> WebhookEndpoint | None:
    """Disable an enabled endpoint and fail what it still had pending; the
    endpoint, or None if it was not enabled."""
    disabled = await session.execute(
        unscoped(
            update(WebhookEndpoint)
            .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.enabled)
            .values(enabled=False, disabled_reason=reason[:500], disabled_at=now, updated_at=now)
            .execution_options(synchronize_session=False),
            WORKERS,
        )
    )
    if not getattr(disabled, "rowcount", 0):
        return None
    await session.execute(
        unscoped(
            update(WebhookDelivery)
            .where(
                WebhookDelivery.endpoint_id == endpoint_id,
                WebhookDelivery.status == DeliveryStatus.pending,
            )
            .values(status=DeliveryStatus.failed, lease_until=None, last_error="endpoint disabled")
            .execution_options(synchronize_session=False),
            WORKERS,
        )
    )
    found = await session.scalar(
        unscoped(select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id), WORKERS)
    )
    return found


async def purge(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` finished deliveries created before `before`, with
    their attempts; how many went."""
    oldest = unscoped(
        select(WebhookDelivery.id)
        .where(WebhookDelivery.created_at < before, WebhookDelivery.status != "pending")
        .limit(batch),
        "the retention sweep covers every organization",
    )
    ids = list((await session.scalars(oldest)).all())
    if ids:
        for table, column in (
            (WebhookAttempt, WebhookAttempt.delivery_id),
            (WebhookDelivery, WebhookDelivery.id),
        ):
            await session.execute(
                unscoped(
                    delete(table).where(column.in_(ids)),
                    "the retention sweep covers every organization",
                )
            )
    return len(ids)


async def purge_periods(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` subscription periods that ended before
    `before` (nothing they wanted is kept any more); how many went."""
    ended = unscoped(
        select(WebhookSubscription.id).where(WebhookSubscription.ended_at < before).limit(batch),
        "the retention sweep covers every organization",
    )
    ids = list((await session.scalars(ended)).all())
    if ids:
        await session.execute(
            unscoped(
                delete(WebhookSubscription).where(WebhookSubscription.id.in_(ids)),
                "the retention sweep covers every organization",
            )
        )
    return len(ids)
