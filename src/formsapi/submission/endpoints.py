from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from formsapi.api_key.scopes import Scope
from formsapi.api_key.service import require_scope
from formsapi.dependencies import PrincipalDep, SessionDep
from formsapi.form.endpoints import ERRORS_404, FormId, PageDep
from formsapi.kit.pagination import Page
from formsapi.kit.time import parse_timestamp
from formsapi.submission import service
from formsapi.submission.schemas import SubmissionOut

router = APIRouter(prefix="/forms/{formId}/submissions", tags=["Submissions"])


def _parse_since(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    try:
        return parse_timestamp(str(value))
    except ValueError as error:
        raise PydanticCustomError("timestamp", str(error)) from None


Since = Annotated[
    datetime | None,
    BeforeValidator(lambda value: None if value is None else _parse_since(value)),
    Query(
        description="ISO 8601; only submissions strictly after it. No offset means UTC.",
        examples=["2026-01-31T09:30:00Z"],
    ),
]


@router.get(
    "",
    response_model=Page[SubmissionOut],
    responses=ERRORS_404,
)
async def list_submissions(
    principal: PrincipalDep,
    session: SessionDep,
    form_id: FormId,
    page: PageDep,
    since: Since = None,
) -> Response:
    """Submissions of one form, most recent first (submittedAt, then id, descending)."""
    require_scope(principal, Scope.submissions_read)
    body = await service.page_document(session, principal.organization_id, form_id, page, since)
    return Response(body, media_type="application/json")
