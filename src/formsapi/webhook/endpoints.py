from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import (
    GuardedRoute,
    PrincipalDep,
    ReadSessionDep,
    SessionDep,
    requires,
)
from formsapi.errors import problem_responses
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.pagination import Page
from formsapi.kit.time import isoformat_z
from formsapi.models import WebhookAttempt, WebhookDelivery
from formsapi.routing import PageDep, json
from formsapi.services import services
from formsapi.webhook import service
from formsapi.webhook.schemas import (
    DeliveryDetail,
    DeliveryOut,
    Recover,
    Recovered,
    SecretRotated,
    TestSent,
    WebhookEndpointCreate,
    WebhookEndpointCreated,
    WebhookEndpointOut,
    WebhookEndpointUpdate,
)

router = APIRouter(prefix="/v1/webhook-endpoints", tags=["Webhooks"], route_class=GuardedRoute)
MANAGE = requires(Scope.webhooks_manage)
ERRORS = problem_responses(
    400, 401, 403, 404, 429, _404="No such webhook endpoint (or delivery) in this organization."
)
ERRORS_WRITE = problem_responses(
    400,
    401,
    403,
    404,
    408,
    413,
    415,
    422,
    429,
    _404="No such webhook endpoint (or delivery) in this organization.",
)
DISABLED = "The endpoint is disabled: enable it first (`PATCH` with `enabled: true`)."
ERRORS_SEND = {**ERRORS, **problem_responses(409, _409=DISABLED)}
ERRORS_RECOVER = {**ERRORS_WRITE, **problem_responses(409, _409=DISABLED)}

EndpointId = Annotated[
    str, Path(alias="endpointId", pattern=ID_PATTERN, max_length=64, description="An endpoint id.")
]
DeliveryId = Annotated[
    str, Path(alias="deliveryId", pattern=ID_PATTERN, max_length=64, description="A delivery id.")
]


def _settings(request: Request) -> Any:
    return services(request).settings


@router.post(
    "",
    status_code=201,
    response_model=WebhookEndpointCreated,
    responses=ERRORS_WRITE,
    openapi_extra=MANAGE,
)
async def create_endpoint(
    principal: PrincipalDep, session: SessionDep, request: Request, body: WebhookEndpointCreate
) -> Response:
    """Register a URL to receive your organization's events, signed per
    Standard Webhooks. The answer carries the signing `secret`, this once.
    The URL must be https on a public address, checked now and again at
    every delivery. The key needs the read scope of every event type the
    endpoint gets (`submissions:read` for submission events, `forms:read`
    for form events): an endpoint is never sent what its creator cannot read."""
    endpoint, secret = await service.create(
        session,
        services(request).secret_box,
        principal.organization_id,
        body,
        policy=service.egress_policy(_settings(request)),
        scopes=principal.scopes,
    )
    return json({**service.endpoint_wire(endpoint), "secret": secret}, 201)


@router.get("", response_model=Page[WebhookEndpointOut], responses=ERRORS, openapi_extra=MANAGE)
async def list_endpoints(principal: PrincipalDep, session: ReadSessionDep) -> Response:
    """Every webhook endpoint of your organization, oldest first (50 at most)."""
    endpoints = await service.list_all(session, principal.organization_id)
    return json(
        {
            "data": [service.endpoint_wire(e) for e in endpoints],
            "pagination": {"page": 1, "limit": service.MAX_ENDPOINTS, "total": len(endpoints)},
        }
    )


@router.get(
    "/{endpointId}", response_model=WebhookEndpointOut, responses=ERRORS, openapi_extra=MANAGE
)
async def get_endpoint(
    principal: PrincipalDep, session: ReadSessionDep, endpoint_id: EndpointId
) -> Response:
    """One endpoint, with why it was disabled if it was."""
    return json(
        service.endpoint_wire(await service.get(session, principal.organization_id, endpoint_id))
    )


@router.patch(
    "/{endpointId}",
    response_model=WebhookEndpointOut,
    responses=ERRORS_WRITE,
    openapi_extra=MANAGE,
)
async def update_endpoint(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    endpoint_id: EndpointId,
    body: WebhookEndpointUpdate,
) -> Response:
    """Change an endpoint; only the fields sent change. `enabled: true`
    re-enables one that was disabled: then `recover` sends what it missed.
    Moving it to another `url`, or widening `eventTypes` or `formIds`, needs
    the read scope of every event type it will get, as creating one does."""
    endpoint = await service.update(
        session,
        principal.organization_id,
        endpoint_id,
        body,
        policy=service.egress_policy(_settings(request)),
        scopes=principal.scopes,
    )
    return json(service.endpoint_wire(endpoint))


@router.delete("/{endpointId}", status_code=204, responses=ERRORS, openapi_extra=MANAGE)
async def delete_endpoint(
    principal: PrincipalDep, session: SessionDep, endpoint_id: EndpointId
) -> Response:
    """Remove an endpoint and its delivery log; nothing more is sent to it."""
    await service.delete(session, principal.organization_id, endpoint_id)
    return Response(status_code=204)


@router.post(
    "/{endpointId}/rotate-secret",
    response_model=SecretRotated,
    responses=ERRORS,
    openapi_extra=MANAGE,
)
async def rotate_secret(
    principal: PrincipalDep, session: SessionDep, request: Request, endpoint_id: EndpointId
) -> Response:
    """A new signing secret, shown this once. For 24 hours each delivery is
    signed with both, so your receiver can switch without missing one."""
    endpoint, secret = await service.rotate_secret(
        session, services(request).secret_box, principal.organization_id, endpoint_id
    )
    assert endpoint.previous_secret_until is not None
    return json(
        {"secret": secret, "previousSecretExpiresAt": isoformat_z(endpoint.previous_secret_until)}
    )


@router.post(
    "/{endpointId}/test",
    status_code=202,
    response_model=TestSent,
    responses=ERRORS_SEND,
    openapi_extra=MANAGE,
)
async def send_test(
    principal: PrincipalDep, session: SessionDep, endpoint_id: EndpointId
) -> Response:
    """Send a `ping` event to this endpoint alone, at once; its delivery
    shows in the endpoint's log."""
    event_id, delivery_id = await service.send_test(session, principal.organization_id, endpoint_id)
    return json({"eventId": event_id, "deliveryId": delivery_id}, 202)


def _delivery(found: WebhookDelivery) -> dict[str, Any]:
    def moment(value: datetime | None) -> str | None:
        return isoformat_z(value) if value else None

    return {
        "id": found.id,
        "eventId": found.event_id,
        "eventType": found.event_type,
        "status": found.status,
        "attempts": found.attempts,
        "nextAttemptAt": moment(found.next_attempt_at) if found.status == "pending" else None,
        "lastAttemptAt": moment(found.last_attempt_at),
        "lastStatusCode": found.last_status_code,
        "lastError": found.last_error,
        "createdAt": isoformat_z(found.created_at),
    }


def _attempt(found: WebhookAttempt) -> dict[str, Any]:
    return {
        "attemptedAt": isoformat_z(found.attempted_at),
        "durationMs": found.duration_ms,
        "statusCode": found.status_code,
        "responseBody": found.response_body,
        "error": found.error,
    }


@router.get(
    "/{endpointId}/deliveries",
    response_model=Page[DeliveryOut],
    responses=ERRORS,
    openapi_extra=MANAGE,
)
async def list_deliveries(
    principal: PrincipalDep,
    session: ReadSessionDep,
    endpoint_id: EndpointId,
    page: PageDep,
    status: Annotated[
        Literal["pending", "succeeded", "failed"] | None, Query(description="Only these.")
    ] = None,
) -> Response:
    """The endpoint's deliveries, newest first (kept 30 days)."""
    rows, total = await service.deliveries(
        session, principal.organization_id, endpoint_id, page, status
    )
    return json(
        {
            "data": [_delivery(row) for row in rows],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


@router.get(
    "/{endpointId}/deliveries/{deliveryId}",
    response_model=DeliveryDetail,
    responses=ERRORS,
    openapi_extra=MANAGE,
)
async def get_delivery(
    principal: PrincipalDep,
    session: ReadSessionDep,
    endpoint_id: EndpointId,
    delivery_id: DeliveryId,
) -> Response:
    """One delivery with every attempt: status, duration, the receiver's
    answer (its first 2 KB)."""
    found, attempts = await service.delivery_detail(
        session, principal.organization_id, endpoint_id, delivery_id
    )
    return json({**_delivery(found), "attemptLog": [_attempt(a) for a in attempts]})


@router.post(
    "/{endpointId}/deliveries/{deliveryId}/resend",
    status_code=202,
    response_model=DeliveryOut,
    responses=ERRORS_SEND,
    openapi_extra=MANAGE,
)
async def resend_delivery(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    endpoint_id: EndpointId,
    delivery_id: DeliveryId,
) -> Response:
    """Send it once more, now: the same event and `webhook-id`."""
    found = await service.resend(
        session,
        principal.organization_id,
        endpoint_id,
        delivery_id,
        len(_settings(request).webhook_retry_schedule),
        scopes=principal.scopes,
    )
    return json(_delivery(found), 202)


@router.post(
    "/{endpointId}/recover",
    status_code=202,
    response_model=Recovered,
    responses=ERRORS_RECOVER,
    openapi_extra=MANAGE,
)
async def recover(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    endpoint_id: EndpointId,
    body: Recover,
) -> Response:
    """Send again everything that failed since `since`, and every event
    since then the endpoint never got though it wanted it at the time (it
    was disabled): after fixing a receiver, this makes its copy whole. Never
    an event from before the endpoint existed, or of a type or form its
    filters left out then."""
    queued = await service.recover(
        session,
        principal.organization_id,
        endpoint_id,
        body.since,
        services(request).settings.event_days,
        scopes=principal.scopes,
    )
    return json({"queued": queued}, 202)
