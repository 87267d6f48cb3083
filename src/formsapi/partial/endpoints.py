from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, SessionDep, requires
from formsapi.errors import NotFound
from formsapi.file import service as file_service
from formsapi.form import service as form_service
from formsapi.kit.ids import ID_PATTERN, is_plausible
from formsapi.kit.pagination import Page
from formsapi.kit.time import utcnow
from formsapi.partial import repository, service
from formsapi.partial.schemas import PartialOut
from formsapi.routing import ERRORS_404, FormId, PageDep, json

router = APIRouter(
    prefix="/v1/forms/{formId}/partials", tags=["Partials"], route_class=GuardedRoute
)

PartialId = Annotated[
    str,
    Path(alias="partialId", pattern=ID_PATTERN, max_length=64, description="A partial's id."),
]


@router.get(
    "",
    response_model=Page[PartialOut],
    responses=ERRORS_404,
    openapi_extra=requires(Scope.forms_read),
)
async def list_partials(
    principal: PrincipalDep, session: ReadSessionDep, form_id: FormId, page: PageDep
) -> Response:
    """Respondents on their way through a form with pages, most recently
    active first: where people stop. Answers come only with the
    `submissions:read` scope. Partials are never submissions: completing one
    makes a submission, and it leaves this list."""
    organization_id = principal.organization_id
    await form_service.get(session, organization_id, form_id)
    rows, total = await repository.list_open(
        session, organization_id, form_id, utcnow(), page.limit, page.offset
    )
    with_answers = Scope.submissions_read in principal.scopes
    return json(
        {
            "data": [service.view(row, with_answers) for row in rows],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


@router.delete(
    "/{partialId}",
    status_code=204,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_write),
)
async def delete_partial(
    principal: PrincipalDep, session: SessionDep, form_id: FormId, partial_id: PartialId
) -> Response:
    """Erase a respondent's unfinished answers: nothing of them is kept
    (the files they uploaded go too), and their link no longer opens the form."""
    organization_id = principal.organization_id
    erased = (
        await repository.erase(session, organization_id, form_id, partial_id)
        if is_plausible(partial_id)
        else None
    )
    if erased is None:
        raise NotFound(f"No partial with id '{partial_id}'.")
    await file_service.drop_named(session, organization_id, form_id, erased)
    return Response(status_code=204)
