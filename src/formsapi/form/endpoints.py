from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.api_key.service import require_scope
from formsapi.dependencies import PrincipalDep, SessionDep
from formsapi.errors import problem_responses
from formsapi.form import service
from formsapi.form.schemas import FormDetail, FormSummary
from formsapi.kit.pagination import Page, PageParams, page_params

router = APIRouter(prefix="/forms", tags=["Forms"])

FormId = Annotated[str, Path(alias="formId", max_length=64, description="A form id.")]
PageDep = Annotated[PageParams, Depends(page_params)]

ERRORS = problem_responses(400, 401, 403, 429)
ERRORS_404 = problem_responses(400, 401, 403, 404, 429)


def json(body: object) -> Response:
    # orjson straight to bytes: the list endpoints skip generic serialization.
    return Response(orjson.dumps(body), media_type="application/json")


@router.get("", response_model=Page[FormSummary], responses=ERRORS)
async def list_forms(principal: PrincipalDep, session: SessionDep, page: PageDep) -> Response:
    """The forms of the key's organization, newest first."""
    require_scope(principal, Scope.forms_read)
    body = await service.page_document(session, principal.organization_id, page)
    return Response(body, media_type="application/json")


@router.get(
    "/{formId}",
    response_model=FormDetail,
    responses=ERRORS_404,
)
async def get_form(principal: PrincipalDep, session: SessionDep, form_id: FormId) -> Response:
    """One form: its fields, its ordered question and layout blocks, and the JSON
    Schema (draft 2020-12) of the answers object those blocks define."""
    require_scope(principal, Scope.forms_read)
    form = await service.get(session, principal.organization_id, form_id)
    return json(service.detail(form))
