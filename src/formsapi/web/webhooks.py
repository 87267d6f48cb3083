"""The Webhooks page: owners and admins add endpoints (the signing secret
shown once), pause, re-enable and delete them, send a test event, rotate the
secret, read each endpoint's delivery log, resend a delivery and recover what
an endpoint missed. Everything goes through formsapi.webhook.service, as the
API does, so both refuse the same things with the same words."""

import re
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response
from markupsafe import Markup, escape
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.scopes import ROLE_SCOPES
from formsapi.config import Settings
from formsapi.errors import BadRequest, FormsAPIError, ValidationFailed
from formsapi.form import service as form_service
from formsapi.kit.ids import is_plausible
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import parse_timestamp, utcnow
from formsapi.member import service as member_service
from formsapi.models import EventType, WebhookEndpoint
from formsapi.services import services
from formsapi.web.context import DbDep, FormText, PathId, ReadDep, back_with, render, templates
from formsapi.web.pages import Managed, PageRoute, Section, keep
from formsapi.webhook import service
from formsapi.webhook.schemas import WebhookEndpointCreate, WebhookEndpointUpdate
from formsapi.webhook.service import DeliveryNotFound, EndpointNotFound

PAGE = "/settings/webhooks"
PER_PAGE = 20
FORM_CHOICES = 100  # an endpoint names at most 100 forms (WebhookEndpointCreate)
LOCAL_MINUTE = "%Y-%m-%dT%H:%M"  # what <input type="datetime-local"> shows and sends
EVENT_HELP = {
    EventType.submission_created: "A submission arrives",
    EventType.submission_updated: "A submission is corrected",
    EventType.submission_deleted: "A submission is deleted",
    EventType.form_created: "A form is created",
    EventType.form_updated: "A form's title, slug or blocks change",
    EventType.form_status_changed: "A form is published, closed or archived",
    EventType.form_deleted: "A form is deleted",
    EventType.webhook_endpoint_disabled: "An endpoint of yours is disabled",
}
# The badge colours app.css has: green, red, grey.
DELIVERY_BADGE = {"succeeded": "active", "failed": "revoked", "pending": "draft"}
FIELD_NAMES = {
    "url": "URL",
    "description": "Description",
    "eventTypes": "Event types",
    "event_types": "Event types",
    "formIds": "Forms",
    "form_ids": "Forms",
}
DeliveryStatus = Literal["pending", "succeeded", "failed"]


def _endpoint_page(endpoint_id: str) -> str:
    return f"{PAGE}/{endpoint_id}"


def _back(request: Request, error: FormsAPIError) -> str:
    """A refused form goes back to the page it is on: the endpoint's, or a
    delivery's; to the nearest one still there when what it names is missing
    (in this organization)."""
    endpoint_id: str | None = request.path_params.get("endpoint_id")
    delivery_id: str | None = request.path_params.get("delivery_id")
    if endpoint_id is None or isinstance(error, EndpointNotFound):
        return PAGE
    if delivery_id is None or isinstance(error, DeliveryNotFound):
        return _endpoint_page(endpoint_id)
    return f"{_endpoint_page(endpoint_id)}/deliveries/{delivery_id}"


SECTION = Section(
    "webhooks",
    "Webhooks",
    PAGE,
    back=_back,
    may_open=member_service.can_manage_webhooks,
    closed="Only owners and admins manage webhooks: they send "
    "{organization}'s data to other servers.",
    fields=FIELD_NAMES,
)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)


def breakable(url: str) -> Markup:
    """The URL, escaped, that a narrow screen may wrap after each / ? & or =
    (a browser does not break a URL on its own, and would widen the page)."""
    return Markup("<wbr>").join(escape(part) for part in re.split(r"(?<=[/?&=])", url))


templates.env.globals["breakable"] = breakable  # for the endpoint's page


def _invalid(error: ValidationError) -> ValidationFailed:
    """What the form's fields broke, as the service would say it."""
    return ValidationFailed(
        "Check the form.",
        [
            {
                "pointer": "/" + "/".join(str(part) for part in problem["loc"]),
                "detail": problem["msg"],
            }
            for problem in error.errors()
        ],
    )


def _scopes(managed: Managed) -> frozenset[str]:
    """What a member may read, as their keys may: an endpoint they point
    somewhere is sent nothing more."""
    return ROLE_SCOPES.get(managed.role, frozenset())


def _settings(request: Request) -> Settings:
    settings: Settings = services(request).settings
    return settings


async def _form_choices(
    session: AsyncSession, organization_id: str
) -> tuple[list[tuple[str, str]], int]:
    """(id, title) of the newest forms an endpoint may be narrowed to, and how many there are."""
    rows, total = await form_service.list_page(
        session, organization_id, PageParams(limit=FORM_CHOICES)
    )
    return [(row.id, row.title) for row in rows], total


def _recover_from(endpoint: WebhookEndpoint) -> datetime | None:
    """Where recovering should start: a minute before its deliveries began
    failing, or before it was disabled (the log counts a delivery from when
    it was made, which may be a little before its first failed attempt)."""
    moments = [m for m in (endpoint.failing_since, endpoint.disabled_at) if m is not None]
    return min(moments) - timedelta(minutes=1) if moments else None


@router.get("")
async def webhooks(request: Request, session: ReadDep, managed: OrganizationDep) -> Response:
    organization_id, viewer = managed.organization.id, managed.viewer
    endpoints = await service.list_all(session, organization_id)
    forms, form_total = await _form_choices(session, organization_id)
    return render(
        request,
        "webhooks/webhooks.html",
        viewer,
        section=SECTION.name,
        endpoints=endpoints,
        event_types=[(str(type_), help) for type_, help in EVENT_HELP.items()],
        forms=forms,
        form_total=form_total,
        form_titles=dict(forms),
        configured=services(request).secret_box is not None,
        max_endpoints=service.MAX_ENDPOINTS,
        posted=viewer.flash.get("posted") or {},
    )


@router.post("")
async def add(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    url: FormText = "",
    description: FormText = "",
    event_types: Annotated[list[str] | None, Form()] = None,
    form_ids: Annotated[list[str] | None, Form()] = None,
) -> Response:
    # Shown again in the form if it is refused: only what the form can tick,
    # so the session keeps little.
    keep(
        request,
        posted={
            "url": url,
            "description": description,
            "event_types": [t for t in event_types or [] if t in EVENT_HELP],
            "form_ids": [f for f in form_ids or [] if is_plausible(f)][:FORM_CHOICES],
        },
    )
    try:
        body = WebhookEndpointCreate.model_validate(
            {
                "url": url.strip(),
                "description": description.strip(),
                "event_types": event_types or [],
                "form_ids": form_ids or [],
            }
        )
    except ValidationError as error:
        raise _invalid(error) from None
    endpoint, secret = await service.create(
        session,
        services(request).secret_box,
        managed.organization.id,
        body,
        policy=service.egress_policy(_settings(request)),
        scopes=_scopes(managed),
    )
    # Carried to the endpoint's page in the session's encrypted one-time
    # message: a reload or the back button finds it gone.
    return await back_with(
        session,
        managed.viewer,
        _endpoint_page(endpoint.id),
        secret={"endpoint": endpoint.id, "secret": secret, "old_until": None},
    )


@router.get("/{endpoint_id}")
async def endpoint_page(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    endpoint_id: PathId,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    status: Annotated[DeliveryStatus | None, Query()] = None,
) -> Response:
    organization_id, viewer = managed.organization.id, managed.viewer
    endpoint = await service.get(session, organization_id, endpoint_id)
    rows, total = await service.deliveries(
        session, organization_id, endpoint_id, PageParams(page=page, limit=PER_PAGE), status
    )
    forms, _ = await _form_choices(session, organization_id)
    shown: dict[str, Any] = viewer.flash.get("secret") or {}
    # Right after re-enabling, the moment it was disabled is gone from the
    # endpoint: the enabling carried it here.
    since = viewer.flash.get("recover_from") or _recover_from(endpoint)
    if isinstance(since, str):
        since = parse_timestamp(since)
    return render(
        request,
        "webhooks/webhook.html",
        viewer,
        section=SECTION.name,
        endpoint=endpoint,
        secret=shown if shown.get("endpoint") == endpoint.id else None,
        form_titles=dict(forms),
        deliveries=rows,
        total=total,
        page=page,
        pages=max(1, -(-total // PER_PAGE)),
        only=status,  # render's own `status` is the response's
        statuses=list(DELIVERY_BADGE),
        badge=DELIVERY_BADGE,
        old_secret_until=_old_secret_until(endpoint),
        recover_since=(since or utcnow() - timedelta(hours=24)).strftime(LOCAL_MINUTE),
        recover_preset="a minute before it was disabled or its deliveries began failing"
        if since
        else "24 hours ago",
        now=utcnow().strftime(LOCAL_MINUTE),
    )


def _old_secret_until(endpoint: WebhookEndpoint) -> datetime | None:
    until = endpoint.previous_secret_until
    return until if endpoint.previous_secret and until and until > utcnow() else None


@router.get("/{endpoint_id}/deliveries/{delivery_id}")
async def delivery_page(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    endpoint_id: PathId,
    delivery_id: PathId,
) -> Response:
    organization_id = managed.organization.id
    endpoint = await service.get(session, organization_id, endpoint_id)
    delivery, attempts = await service.delivery_detail(
        session, organization_id, endpoint_id, delivery_id
    )
    return render(
        request,
        "webhooks/webhook.html",
        managed.viewer,
        section=SECTION.name,
        endpoint=endpoint,
        delivery=delivery,
        attempts=attempts,
        badge=DELIVERY_BADGE,
    )


@router.get("/{endpoint_id}/delete")
async def confirm_delete(
    request: Request, session: ReadDep, managed: OrganizationDep, endpoint_id: PathId
) -> Response:
    endpoint = await service.get(session, managed.organization.id, endpoint_id)
    return render(
        request,
        "webhooks/webhook.html",
        managed.viewer,
        section=SECTION.name,
        endpoint=endpoint,
        confirm_delete=True,
    )


@router.post("/{endpoint_id}/delete")
async def delete(session: DbDep, managed: OrganizationDep, endpoint_id: PathId) -> Response:
    organization_id = managed.organization.id
    endpoint = await service.get(session, organization_id, endpoint_id)
    await service.delete(session, organization_id, endpoint_id)
    return await back_with(
        session,
        managed.viewer,
        PAGE,
        notice=f"The endpoint {endpoint.url} is deleted, with its delivery log: "
        "nothing more is sent to it.",
    )


async def _set_enabled(
    request: Request,
    session: AsyncSession,
    managed: Managed,
    endpoint_id: str,
    enabled: bool,
) -> Response:
    organization_id = managed.organization.id
    endpoint = await service.get(session, organization_id, endpoint_id)
    recover_from = _recover_from(endpoint)
    await service.update(
        session,
        organization_id,
        endpoint_id,
        WebhookEndpointUpdate(enabled=enabled),
        policy=service.egress_policy(_settings(request)),
        scopes=_scopes(managed),
    )
    if not enabled:
        return await back_with(
            session,
            managed.viewer,
            _endpoint_page(endpoint_id),
            notice="Disabled: nothing is sent to it until it is enabled again.",
        )
    return await back_with(
        session,
        managed.viewer,
        _endpoint_page(endpoint_id),
        notice="Enabled: new events are sent to it again. What it missed meanwhile is "
        "sent only if you recover it, below.",
        recover_from=recover_from.isoformat() if recover_from else None,
    )


@router.post("/{endpoint_id}/enable")
async def enable(
    request: Request, session: DbDep, managed: OrganizationDep, endpoint_id: PathId
) -> Response:
    return await _set_enabled(request, session, managed, endpoint_id, True)


@router.post("/{endpoint_id}/disable")
async def disable(
    request: Request, session: DbDep, managed: OrganizationDep, endpoint_id: PathId
) -> Response:
    return await _set_enabled(request, session, managed, endpoint_id, False)


@router.post("/{endpoint_id}/test")
async def send_test(session: DbDep, managed: OrganizationDep, endpoint_id: PathId) -> Response:
    await service.send_test(session, managed.organization.id, endpoint_id)
    return await back_with(
        session,
        managed.viewer,
        _endpoint_page(endpoint_id),
        notice="A test event (ping) is on its way. Reload in a moment to see how it went.",
    )


@router.post("/{endpoint_id}/rotate")
async def rotate(
    request: Request, session: DbDep, managed: OrganizationDep, endpoint_id: PathId
) -> Response:
    endpoint, secret = await service.rotate_secret(
        session, services(request).secret_box, managed.organization.id, endpoint_id
    )
    until = endpoint.previous_secret_until
    return await back_with(
        session,
        managed.viewer,
        _endpoint_page(endpoint_id),
        secret={
            "endpoint": endpoint.id,
            "secret": secret,
            "old_until": until.strftime("%Y-%m-%d %H:%M") if until else None,
        },
    )


@router.post("/{endpoint_id}/deliveries/{delivery_id}/resend")
async def resend(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    endpoint_id: PathId,
    delivery_id: PathId,
) -> Response:
    found = await service.resend(
        session,
        managed.organization.id,
        endpoint_id,
        delivery_id,
        len(_settings(request).webhook_retry_schedule),
        scopes=_scopes(managed),
    )
    sending = found.lease_until is not None  # a worker has it in hand: left as it is
    return await back_with(
        session,
        managed.viewer,
        f"{_endpoint_page(endpoint_id)}/deliveries/{delivery_id}",
        notice="It is being sent right now; reload in a moment to see how it went."
        if sending
        else "Sent again (once, not retried), with the same webhook-id. "
        "Reload in a moment to see how it went.",
    )


@router.post("/{endpoint_id}/recover")
async def recover(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    endpoint_id: PathId,
    since: FormText = "",
) -> Response:
    try:
        moment = parse_timestamp(since)
    except ValueError:
        raise BadRequest("Choose the date and time (UTC) to recover from.") from None
    queued = await service.recover(
        session,
        managed.organization.id,
        endpoint_id,
        moment,
        _settings(request).event_days,
        scopes=_scopes(managed),
    )
    when = moment.strftime("%Y-%m-%d %H:%M")
    notice = (
        f"Nothing to recover: it missed nothing since {when} UTC."
        if queued == 0
        else f"{queued} deliver{'y is' if queued == 1 else 'ies are'} due now: everything "
        f"that failed, or never went, since {when} UTC. They show below as they are sent."
    )
    return await back_with(session, managed.viewer, _endpoint_page(endpoint_id), notice=notice)
