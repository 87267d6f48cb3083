"""Webhook endpoints: where an organization's events are POSTed, each with
its own signing secret, shown once and kept sealed; and what owners see and
do about deliveries (the log, a resend, recovering what failed)."""

import base64
import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.db.engine import async_url
from formsapi.errors import Conflict, Forbidden, FormsAPIError, NotFound, ValidationFailed
from formsapi.event import service as event_service
from formsapi.form import repository as form_repository
from formsapi.kit import egress
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.pagination import PageParams
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.models import (
    DeliveryStatus,
    EventType,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookSubscription,
)
from formsapi.webhook import repository
from formsapi.webhook.schemas import WebhookEndpointCreate, WebhookEndpointUpdate

SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret
ROTATION_OVERLAP = timedelta(hours=24)
MAX_ENDPOINTS = 50  # per organization
RECOVER_BATCH = 10_000  # events one recover call looks through, so each stays short
# The newest periods of an endpoint's subscriptions that recovering looks
# at: an endpoint refiltered more often than this sends less, never more.
RECOVER_PERIODS = 50


class WebhooksUnavailable(FormsAPIError):
    """Webhooks need a key to seal their signing secrets, and this
    PostgreSQL deployment has none: its operator sets FORMSAPI_SECRET_KEY
    (32 characters or more, the same on every process) and restarts."""

    status = 503
    title = "Webhooks not configured"
    slug = "webhooks-not-configured"


class EndpointNotFound(NotFound):
    def __init__(self, endpoint_id: str) -> None:
        super().__init__(f"No webhook endpoint with id '{endpoint_id}' in this organization.")


class EndpointDisabled(Conflict):
    def __init__(self) -> None:
        super().__init__("Enable the endpoint first: nothing is sent to a disabled endpoint.")


def _enabled(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A disabled endpoint's worker sends nothing, so queuing to it would
    only fail: say so instead."""
    if not endpoint.enabled:
        raise EndpointDisabled()
    return endpoint


class DeliveryNotFound(NotFound):
    def __init__(self, delivery_id: str) -> None:
        super().__init__(f"No delivery with id '{delivery_id}' for this endpoint.")


def secret_box(settings: Settings) -> SecretBox | None:
    """The box webhook secrets are sealed in: FORMSAPI_SECRET_KEY's keys;
    without them, on SQLite, a key file made beside the database (0600);
    on PostgreSQL, None (every process must share the key)."""
    if settings.secret_key:
        return SecretBox([key.get_secret_value() for key in settings.secret_key])
    url = make_url(async_url(settings.database_url.get_secret_value()))
    if url.get_backend_name() != "sqlite":
        return None
    if not url.database or url.database == ":memory:":
        return SecretBox([secrets.token_urlsafe(32)])  # lives as long as the database
    path = Path(f"{url.database}.key")
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None  # no directory to keep it in: the database cannot be there either
    else:
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(32))
    return SecretBox([path.read_text().strip()])


def _box(box: SecretBox | None) -> SecretBox:
    if box is None:
        raise WebhooksUnavailable(
            "Webhooks are not configured on this server: its operator must set FORMSAPI_SECRET_KEY."
        )
    return box


def new_secret() -> str:
    """`whsec_` and 32 random bytes in base64, as Standard Webhooks describes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def disabled_event_data(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """What `webhook_endpoint.disabled` says: the endpoint without its URL,
    which may carry a token that readers of events should not see."""
    data = endpoint_wire(endpoint)
    del data["url"]
    return data


def endpoint_wire(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as the API shows it (WebhookEndpointOut), never its secrets."""

    def moment(value: datetime | None) -> str | None:
        return isoformat_z(value) if value else None

    now = utcnow()
    until = endpoint.previous_secret_until
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "description": endpoint.description,
        "eventTypes": endpoint.event_types,
        "formIds": endpoint.form_ids,
        "enabled": endpoint.enabled,
        "disabledReason": endpoint.disabled_reason,
        "disabledAt": moment(endpoint.disabled_at),
        "failingSince": moment(endpoint.failing_since),
        "previousSecretExpiresAt": moment(until) if until and until > now else None,
        "createdAt": isoformat_z(endpoint.created_at),
        "updatedAt": isoformat_z(endpoint.updated_at),
    }


def egress_policy(settings: Settings) -> egress.Policy:
    """Where webhooks may be sent, and how their hosts are looked up."""
    return egress.Policy(
        allow_private=settings.webhook_allow_private_networks,
        nameservers=tuple(settings.webhook_dns_servers),
        lookup_timeout=settings.webhook_dns_timeout,
    )


async def _checked_url(url: str, policy: egress.Policy) -> str:
    """The URL normalized, its host looked up and vetted. Called before the
    request's first statement: a lookup may take seconds, and must hold no
    transaction (on SQLite, the write lock) and no pooled connection."""
    try:
        return await egress.check_destination(url, policy)
    except egress.EgressRefused as refused:
        raise ValidationFailed(
            "The URL cannot receive webhooks.", [{"pointer": "/url", "detail": str(refused)}]
        ) from None


def _require_read_scopes(
    scopes: frozenset[str], event_types: Sequence[str], *, because: str
) -> None:
    """An endpoint sends what its events carry: whoever points one at a URL,
    or widens what it gets, must be able to read all of that themselves."""
    wanted = event_types or list(EventType)
    needed = sorted({str(event_service.READ_SCOPE[EventType(t)]) for t in wanted} - scopes)
    if needed:
        raise Forbidden(
            f"{because} needs the {' and '.join(repr(n) for n in needed)} scope"
            f"{'s' if len(needed) > 1 else ''} too: the endpoint would be sent what only "
            f"{'they read' if len(needed) > 1 else 'it reads'}.",
            requiredScope=needed[0],
        )


async def _checked_forms(
    session: AsyncSession, organization_id: str, form_ids: Sequence[str]
) -> list[str]:
    missing = [
        (index, form_id)
        for index, form_id in enumerate(form_ids)
        if not is_plausible(form_id)
        or await form_repository.get(session, organization_id, form_id) is None
    ]
    if missing:
        raise ValidationFailed(
            "Some forms do not exist.",
            [{"pointer": f"/formIds/{i}", "detail": f"no form '{f[:64]}'"} for i, f in missing],
        )
    return sorted(set(form_ids))


async def create(
    session: AsyncSession,
    box: SecretBox | None,
    organization_id: str,
    body: WebhookEndpointCreate,
    *,
    policy: egress.Policy,
    scopes: frozenset[str],
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret, which is shown this once. `scopes`
    are what the caller may read: the endpoint may be sent nothing more."""
    box = _box(box)
    event_types = sorted({str(t) for t in body.event_types})
    _require_read_scopes(scopes, event_types, because="An endpoint for these events")
    url = await _checked_url(body.url, policy)
    if await repository.count_endpoints(session, organization_id) >= MAX_ENDPOINTS:
        raise ValidationFailed(
            f"An organization has at most {MAX_ENDPOINTS} webhook endpoints.",
            [{"pointer": "", "detail": "delete one first"}],
        )
    form_ids = await _checked_forms(session, organization_id, body.form_ids)
    secret = new_secret()
    now = utcnow()
    endpoint = WebhookEndpoint(
        id=new_id("whe"),
        organization_id=organization_id,
        url=url,
        description=body.description,
        event_types=event_types,
        form_ids=form_ids,
        enabled=body.enabled,
        secret=box.seal(secret),
        created_at=now,
        updated_at=now,
    )
    session.add(endpoint)
    await session.flush()
    await repository.subscribe(session, endpoint, now)
    return endpoint, secret


async def get(session: AsyncSession, organization_id: str, endpoint_id: str) -> WebhookEndpoint:
    found = None
    if is_plausible(endpoint_id):
        found = await repository.get_endpoint(session, organization_id, endpoint_id)
    if found is None:
        raise EndpointNotFound(endpoint_id)
    return found


async def list_all(session: AsyncSession, organization_id: str) -> Sequence[WebhookEndpoint]:
    return await repository.list_endpoints(session, organization_id)


def _types_of(periods: Sequence[WebhookSubscription], more: Sequence[str] = ()) -> list[str]:
    """Every event type these periods wanted, and `more`; empty: every type."""
    if any(not period.event_types for period in periods):
        return []
    return sorted({*more, *(t for period in periods for t in period.event_types)})


def _wider(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether a filter (empty: everything) lets through more than it did."""
    return bool(before) and (not after or not set(after) <= set(before))


async def update(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    changes: WebhookEndpointUpdate,
    *,
    policy: egress.Policy,
    scopes: frozenset[str],
) -> WebhookEndpoint:
    """Change what was sent. Enabling a disabled endpoint clears why it was
    disabled; what it missed meanwhile is sent by `recover`. Moving it to
    another URL, or widening what it gets, takes the scopes that read all it
    will then be sent; a new filter starts a new period of its subscription."""
    sent = changes.model_fields_set
    url = None
    if "url" in sent and changes.url is not None:
        url = await _checked_url(changes.url, policy)
    endpoint = await get(session, organization_id, endpoint_id)
    event_types = endpoint.event_types
    if "event_types" in sent and changes.event_types is not None:
        event_types = sorted({str(t) for t in changes.event_types})
    form_ids = endpoint.form_ids
    if "form_ids" in sent and changes.form_ids is not None:
        form_ids = await _checked_forms(session, organization_id, changes.form_ids)
    if url is not None and url != endpoint.url:
        # Whatever it was subscribed to may still go to the new URL: retries,
        # resends and recoveries of what it had, as well as what comes next.
        kept = await repository.subscriptions(session, organization_id, endpoint.id)
        moved_types = [] if not event_types else _types_of(kept, event_types)
        _require_read_scopes(scopes, moved_types, because="Moving an endpoint to another URL")
    elif _wider(endpoint.event_types, event_types) or _wider(endpoint.form_ids, form_ids):
        _require_read_scopes(scopes, event_types, because="Widening what an endpoint is sent")
    now = utcnow()
    if (event_types, form_ids) != (endpoint.event_types, endpoint.form_ids):
        endpoint.event_types, endpoint.form_ids = event_types, form_ids
        await repository.subscribe(session, endpoint, now)
    if url is not None:
        endpoint.url = url
    if "description" in sent and changes.description is not None:
        endpoint.description = changes.description
    if "enabled" in sent and changes.enabled is not None and changes.enabled != endpoint.enabled:
        endpoint.enabled = changes.enabled
        if changes.enabled:
            endpoint.disabled_reason = endpoint.disabled_at = endpoint.failing_since = None
        else:
            endpoint.disabled_reason, endpoint.disabled_at = "Disabled by a member.", now
    endpoint.updated_at = now
    await session.flush()
    return endpoint


async def delete(session: AsyncSession, organization_id: str, endpoint_id: str) -> None:
    if not is_plausible(endpoint_id) or not await repository.delete_endpoint(
        session, organization_id, endpoint_id
    ):
        raise EndpointNotFound(endpoint_id)


async def rotate_secret(
    session: AsyncSession, box: SecretBox | None, organization_id: str, endpoint_id: str
) -> tuple[WebhookEndpoint, str]:
    """A new secret, shown this once; the current one keeps signing beside
    it for 24 hours, so receivers can switch without missing a delivery."""
    endpoint = await get(session, organization_id, endpoint_id)
    box = _box(box)
    secret = new_secret()
    now = utcnow()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_until = now + ROTATION_OVERLAP
    endpoint.secret = box.seal(secret)
    endpoint.updated_at = now
    await session.flush()
    return endpoint, secret


async def send_test(
    session: AsyncSession, organization_id: str, endpoint_id: str
) -> tuple[str, str]:
    """A `ping` event for this endpoint alone, due at once: (event id, delivery id)."""
    endpoint = _enabled(await get(session, organization_id, endpoint_id))
    now = utcnow()
    event_id = await event_service.record(
        session,
        organization_id,
        EventType.ping,
        now,
        # Not the URL: events:read is a read scope, and URLs often carry a token.
        {"id": endpoint.id, "message": "A test event from formsapi."},
    )
    seq = await repository.event_seq(session, organization_id, event_id)
    delivery = _delivery(endpoint, seq, event_id, EventType.ping, now)
    await repository.add_deliveries(session, [delivery])
    return event_id, str(delivery["id"])


def _delivery(
    endpoint: WebhookEndpoint, seq: int, event_id: str, type_: str, now: datetime
) -> dict[str, Any]:
    return {
        "id": new_id("whd"),
        "organization_id": endpoint.organization_id,
        "endpoint_id": endpoint.id,
        "event_seq": seq,
        "event_id": event_id,
        "event_type": type_,
        "status": DeliveryStatus.pending.value,
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
    }


async def deliveries(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    page: PageParams,
    status: str | None,
) -> tuple[Sequence[WebhookDelivery], int]:
    await get(session, organization_id, endpoint_id)
    return await repository.deliveries(
        session, organization_id, endpoint_id, page.offset, page.limit, status
    )


async def delivery_detail(
    session: AsyncSession, organization_id: str, endpoint_id: str, delivery_id: str
) -> tuple[WebhookDelivery, Sequence[Any]]:
    await get(session, organization_id, endpoint_id)
    found = None
    if is_plausible(delivery_id):
        found = await repository.get_delivery(session, organization_id, endpoint_id, delivery_id)
    if found is None:
        raise DeliveryNotFound(delivery_id)
    return found, await repository.attempts(session, organization_id, found.id)


async def resend(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    delivery_id: str,
    schedule_length: int,
    *,
    scopes: frozenset[str],
) -> WebhookDelivery:
    """Send a delivery once more, now, whatever came of it before. Same
    event, same `webhook-id`; a resend that fails is not retried. Only by
    someone who could read what it carries."""
    _enabled(await get(session, organization_id, endpoint_id))
    found, _ = await delivery_detail(session, organization_id, endpoint_id, delivery_id)
    _require_read_scopes(scopes, [found.event_type], because="Resending this delivery")
    now = utcnow()
    if found.lease_until is not None and found.lease_until > now:
        return found  # a worker is sending it right now
    found.status = DeliveryStatus.pending
    found.next_attempt_at = now
    found.lease_until = None
    found.attempts = max(0, schedule_length - 1)  # one attempt left
    await session.flush()
    return found


async def recover(
    session: AsyncSession,
    organization_id: str,
    endpoint_id: str,
    since: datetime,
    event_days: int = 30,
    *,
    scopes: frozenset[str],
) -> int:
    """Everything the endpoint should have had since `since` and has not:
    failed deliveries due again now, and a new delivery of each event it
    never got though it was subscribed to it at the time (it was disabled),
    RECOVER_BATCH at most a call (call again for more). Never an event from
    before the endpoint existed, or of a type or form it did not want then.
    How many are due."""
    endpoint = _enabled(await get(session, organization_id, endpoint_id))
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)  # no offset means UTC, as everywhere in the API
    now = utcnow()
    since = max(since, now - timedelta(days=event_days))  # nothing older is kept
    queued = await repository.requeue_failed(session, organization_id, endpoint_id, since, now)
    periods = await repository.subscriptions(
        session, organization_id, endpoint.id, since, RECOVER_PERIODS
    )
    _require_read_scopes(scopes, _types_of(periods), because="Recovering these events")
    missed = await repository.events_never_delivered(
        session, organization_id, endpoint_id, since, periods, RECOVER_BATCH
    )
    rows = [_delivery(endpoint, *event, now) for event in missed]
    await repository.add_deliveries(session, rows)
    return queued + len(rows)
