from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, requires
from formsapi.errors import BadRequest, problem_responses
from formsapi.event import service
from formsapi.event.schemas import Events
from formsapi.kit.ids import ID_PATTERN
from formsapi.models import EventType

router = APIRouter(prefix="/v1/events", tags=["Events"], route_class=GuardedRoute)

_TYPES = frozenset(EventType)


def _types(values: list[str]) -> list[str]:
    wanted = sorted({t.strip() for value in values for t in value.split(",") if t.strip()})
    unknown = [t for t in wanted if t not in _TYPES]
    if unknown:
        raise BadRequest(
            f"Unknown event type {', '.join(unknown)[:200]}; choose from: {', '.join(EventType)}."
        )
    return wanted


@router.get(
    "",
    response_model=Events,
    responses=problem_responses(
        400,
        401,
        403,
        410,
        429,
        _410="`after` names no event kept for your organization "
        "(`/problems/event-cursor-expired`).",
    ),
    openapi_extra=requires(Scope.events_read),
)
async def list_events(
    principal: PrincipalDep,
    session: ReadSessionDep,
    after: Annotated[
        str | None,
        Query(
            pattern=ID_PATTERN,
            max_length=64,
            description="The `next` of your previous call (an event id); leave it out to "
            "start from the oldest event kept (30 days by default).",
        ),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=service.MAX_EVENTS, description="Events per call, at most 1,000.")
    ] = 100,
    types: Annotated[
        list[str],
        Query(
            max_length=20,
            description="Only these types: comma-separated or repeated.",
            examples=["submission.created,submission.updated"],
        ),
    ] = [],  # noqa: B006 - FastAPI copies a list default per request
    form_id: Annotated[
        str | None,
        Query(alias="formId", pattern=ID_PATTERN, max_length=64, description="Only this form's."),
    ] = None,
) -> Response:
    """Your organization's events, oldest first: what a webhook receiver
    that was away, or a client that polls instead, reads to catch up. Events
    appear in the order their changes committed, so a client that asks for
    the events after its `next` never misses one; repeat while `hasMore`.
    Filtered calls look through at most 10,000 events each, so a page may be
    short or empty with `hasMore` true. An event's `data` shows only to a
    key that can read its resource (`submissions:read` for submission
    events, `forms:read` for form events, `webhooks:manage` for endpoint
    events and pings); to any other it is null, and `requiredScope` names
    the scope that shows it."""
    body = await service.list_document(
        session, principal.organization_id, after, limit, _types(types), form_id, principal.scopes
    )
    return Response(body, media_type="application/json")
