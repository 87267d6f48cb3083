"""Single-use invitation links to a form's hosted page (admission/): made,
listed and revoked through the API."""

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from formsapi.admission import service
from formsapi.admission.schemas import Invitation, InvitationCreate, InvitationsMade
from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, SessionDep, requires
from formsapi.form import service as form_service
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.pagination import Page
from formsapi.kit.time import utcnow
from formsapi.routing import ERRORS_404, ERRORS_WRITE, FormId, PageDep, json
from formsapi.services import services

router = APIRouter(
    prefix="/v1/forms/{formId}/invitations", tags=["Forms"], route_class=GuardedRoute
)

InvitationId = Annotated[
    str,
    Path(alias="invitationId", pattern=ID_PATTERN, max_length=64, description="A link's id."),
]


@router.post(
    "",
    status_code=201,
    response_model=InvitationsMade,
    responses=ERRORS_WRITE,
    openapi_extra=requires(Scope.forms_write),
)
async def create_invitations(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    form_id: FormId,
    body: InvitationCreate,
) -> Response:
    """Make single-use links to the form's hosted page: each is answered
    once (a second post with it, even at the same moment, is refused). Their
    tokens are shown here only; keep or send them now. A form whose
    `oneResponse` is `{"by": "invitation"}` takes answers through these
    links only."""
    organization_id = principal.organization_id
    form = await form_service.get(session, organization_id, form_id)
    anonymous: tuple[str | None, str | None] = (None, None)
    recipients = (
        [(r.email, r.label) for r in body.recipients]
        if body.recipients is not None
        else [anonymous] * (body.count or 0)
    )
    made = await service.invite(session, organization_id, form.id, recipients, utcnow())
    base = services(request).settings.public_url.rstrip("/")
    body_out = {
        "data": [
            {
                **service.view(m.invitation),
                "token": m.token,
                "url": f"{base}/f/{form.id}?invite={m.token}",
            }
            for m in made
        ]
    }
    # The tokens are secrets: no cache keeps this answer.
    return json(body_out, 201, {"Cache-Control": "no-store"})


@router.get(
    "",
    response_model=Page[Invitation],
    responses=ERRORS_404,
    openapi_extra=requires(Scope.forms_read),
)
async def list_invitations(
    principal: PrincipalDep, session: ReadSessionDep, form_id: FormId, page: PageDep
) -> Response:
    """The form's invitation links, newest first: whom each was for, and
    whether it was answered or revoked (never the token)."""
    organization_id = principal.organization_id
    await form_service.get(session, organization_id, form_id)
    shown, total = await service.listed(session, organization_id, form_id, page.limit, page.offset)
    return json(
        {
            "data": shown,
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


@router.delete(
    "/{invitationId}",
    status_code=204,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.forms_write),
)
async def revoke_invitation(
    principal: PrincipalDep, session: SessionDep, form_id: FormId, invitation_id: InvitationId
) -> Response:
    """Revoke a link: it opens the form no more. A link answered already
    stays so; its submission is not touched."""
    organization_id = principal.organization_id
    await form_service.get(session, organization_id, form_id)
    await service.revoke(session, organization_id, form_id, invitation_id, utcnow())
    return Response(status_code=204)
