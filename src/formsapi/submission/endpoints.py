from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import (
    GuardedRoute,
    IdempotencyKeyHeader,
    PrincipalDep,
    ReadSessionDep,
    SessionDep,
    requires,
)
from formsapi.errors import problem_responses
from formsapi.form.endpoints import ERRORS_404, FormId, PageDep, json, replay
from formsapi.idempotency.service import Outcome, fingerprint, run_once
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.pagination import Page
from formsapi.kit.schemas import Schema
from formsapi.kit.time import parse_timestamp
from formsapi.submission import service
from formsapi.submission.schemas import SubmissionOut

router = APIRouter(
    prefix="/forms/{formId}/submissions", tags=["Submissions"], route_class=GuardedRoute
)


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
    openapi_extra=requires(Scope.submissions_read),
)
async def list_submissions(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    page: PageDep,
    since: Since = None,
) -> Response:
    """Submissions of one form, most recent first (submittedAt, then id, descending)."""
    body = await service.page_document(session, principal.organization_id, form_id, page, since)
    return Response(body, media_type="application/json")


SubmissionId = Annotated[
    str,
    Path(alias="submissionId", pattern=ID_PATTERN, max_length=64, description="A submission id."),
]


class SubmissionCreate(Schema):
    answers: dict[str, Any] = Field(
        description="Answers by question key: strings or numbers, as the form's schema says. "
        "Leave a key out for no answer."
    )


@router.post(
    "",
    status_code=201,
    response_model=SubmissionOut,
    responses=problem_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 429),
    openapi_extra=requires(Scope.submissions_write),
)
async def create_submission(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    form_id: FormId,
    body: SubmissionCreate,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Submit answers to a published form (409 otherwise). They are checked
    against the form's schema; 422 lists every error with its JSON pointer."""

    async def work() -> Outcome:
        submission = await service.create(session, principal.organization_id, form_id, body.answers)
        return Outcome(
            201,
            orjson.dumps(service.to_dict(submission)),
            f"/v1/forms/{form_id}/submissions/{submission.id}",
        )

    outcome = await run_once(
        session,
        principal.organization_id,
        idempotency_key,
        fingerprint("POST", request.url.path, body.model_dump(mode="json")),
        work,
    )
    return replay(outcome)


@router.get(
    "/{submissionId}",
    response_model=SubmissionOut,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_submission(
    principal: PrincipalDep, session: ReadSessionDep, form_id: FormId, submission_id: SubmissionId
) -> Response:
    """One submission."""
    submission = await service.get(session, principal.organization_id, form_id, submission_id)
    return json(service.to_dict(submission))


@router.delete(
    "/{submissionId}",
    status_code=204,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_write),
)
async def delete_submission(
    principal: PrincipalDep, session: SessionDep, form_id: FormId, submission_id: SubmissionId
) -> Response:
    """Delete one submission; the form's totals follow at once."""
    await service.delete(session, principal.organization_id, form_id, submission_id)
    return Response(status_code=204)
