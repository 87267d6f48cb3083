from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, requires
from formsapi.routing import ERRORS_404, FormId, json
from formsapi.services import services
from formsapi.spam import service
from formsapi.spam.schemas import RefusalCounts

router = APIRouter(prefix="/v1/forms/{formId}/refusals", tags=["Forms"], route_class=GuardedRoute)


@router.get(
    "",
    response_model=RefusalCounts,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.forms_read),
)
async def list_refusals(
    request: Request,
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    days: Annotated[
        int,
        Query(
            ge=1, le=service.MAX_DAYS, description="The last this many UTC days, today included."
        ),
    ] = service.DEFAULT_DAYS,
) -> Response:
    """How many posts to the form's hosted page were refused as spam, per UTC
    day and reason: the honeypot, the proof-of-work challenge, the public
    page's limits. Refused posts are stored nowhere else (no submission, no
    event, no webhook delivery): a form's admins watch these for false
    positives. Counts are written every few seconds by each server process,
    and by the one answering before it reads them."""
    # The counts this process holds (hosted/guard.py) first: one process,
    # as on SQLite, is never behind.
    await services(request).refusals.flush()
    found = await service.refusals(session, principal.organization_id, form_id, days)
    return json({"data": found})
