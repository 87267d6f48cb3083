from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

import orjson
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from pydantic import Field, TypeAdapter, ValidationError
from starlette.routing import Route

from formsapi.api_key.principal import Principal
from formsapi.api_key.scopes import Scope
from formsapi.dependencies import (
    GuardedRoute,
    IdempotencyKeyHeader,
    PrincipalDep,
    ReadSessionDep,
    SessionDep,
    admit,
    requires,
)
from formsapi.errors import problem_responses
from formsapi.form import service as form_service
from formsapi.idempotency.service import Outcome, fingerprint
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.pagination import Page
from formsapi.kit.schemas import Schema
from formsapi.routing import ERRORS_404, FormId, PageDep, Timestamp, idempotent, json, replay
from formsapi.services import services
from formsapi.submission import export, service
from formsapi.submission.intake import Claim, Intake
from formsapi.submission.schemas import Changes, SubmissionDetail, SubmissionOut

T = TypeVar("T")

router = APIRouter(
    prefix="/v1/forms/{formId}/submissions", tags=["Submissions"], route_class=GuardedRoute
)


Since = Annotated[
    datetime | None,
    Timestamp,
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


@router.get(
    "/changes",
    response_model=Changes,
    responses=problem_responses(400, 401, 403, 404, 410, 429),
    openapi_extra=requires(Scope.submissions_read),
)
async def list_changes(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    after: Annotated[
        int,
        Query(
            ge=0,
            le=2**63 - 1,
            description="The `next` of your previous call; 0 (the default) for a full copy.",
        ),
    ] = 0,
    limit: Annotated[
        int, Query(ge=1, le=service.MAX_CHANGES, description="Changes per call, at most 1,000.")
    ] = 100,
) -> Response:
    """The form's change feed: every submission created, edited or deleted
    after change number `after`, oldest first, each once in its latest state
    (a deleted one as a tombstone). Numbers follow commit order, so a client
    that applies each page and then asks for the changes after its `next`
    never misses one; repeat while `hasMore`, then poll. A cursor older than
    the kept tombstones answers 410: copy the form again from `after=0`."""
    body = await service.changes_document(session, principal.organization_id, form_id, after, limit)
    return Response(body, media_type="application/json")


EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Every live submission, streamed. NDJSON: one submission a line "
        '(as the change feed shows them), then `{"end": true, "changeSeq": N, '
        '"count": n}`; a download without that last line was cut short (or its form '
        "deleted meanwhile). CSV: the settings area's columns.",
        "headers": {
            "X-Change-Seq": {
                "description": "The form's change number the export covers up to: "
                "continue with the change feed from `after` this number.",
                "schema": {"type": "integer"},
            }
        },
        "content": {
            # The schema of each line.
            "application/x-ndjson": {
                "schema": {
                    "oneOf": [
                        {"$ref": "#/components/schemas/SubmissionDetail"},
                        {
                            "type": "object",
                            "title": "ExportEnd",
                            "properties": {
                                "end": {"const": True},
                                "changeSeq": {"type": "integer"},
                                "count": {"type": "integer"},
                            },
                            "required": ["end", "changeSeq", "count"],
                            "additionalProperties": False,
                        },
                    ]
                }
            },
            "text/csv": {"schema": {"type": "string"}},
        },
    },
    **problem_responses(400, 401, 403, 404, 429),
}


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses=EXPORT_RESPONSES,
    openapi_extra=requires(Scope.submissions_read),
)
async def export_submissions(
    principal: PrincipalDep,
    session: ReadSessionDep,
    request: Request,
    form_id: FormId,
    export_format: Annotated[
        Literal["ndjson", "csv"], Query(alias="format", description="ndjson (default) or csv.")
    ] = "ndjson",
) -> StreamingResponse:
    """Every live submission of the form in one streamed response, in change
    number order: the fastest way to make a first copy. `X-Change-Seq` says
    where the export stands in the change feed; continue with the feed from
    there and nothing is missed. If the download breaks, continue with the
    feed from the last `changeSeq` you received."""
    organization_id = principal.organization_id
    form = await form_service.get(session, organization_id, form_id)
    upto = form.change_seq
    sessionmaker = services(request).read_sessionmaker
    headers = {"X-Change-Seq": str(upto)}
    if export_format == "ndjson":
        return StreamingResponse(
            export.ndjson_chunks(sessionmaker, organization_id, form_id, upto),
            media_type="application/x-ndjson",
            headers=headers,
        )
    keys = await export.columns(session, organization_id, form_id)
    headers["Content-Disposition"] = f'attachment; filename="{export.filename(form.slug)}"'
    return StreamingResponse(
        export.csv_chunks(sessionmaker, organization_id, form_id, upto, keys),
        media_type="text/csv; charset=utf-8",
        headers=headers,
    )


class SubmissionCreate(Schema):
    answers: dict[str, Any] = Field(
        description="Answers by question key: strings or numbers, as the form's schema says. "
        "Leave a key out for no answer."
    )
    language: str | None = Field(
        default=None,
        max_length=35,
        description="The language the respondent answered in, when your page shows the form "
        "in one of its translations (`GET /v1/forms/{formId}?lang=`); one of the form's "
        "`languages`. Unset: the form's own.",
    )


@router.post(
    "",
    status_code=201,
    response_model=SubmissionDetail,
    responses=problem_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 429),
    openapi_extra=requires(Scope.submissions_write),
)
async def create_submission(
    principal: PrincipalDep,
    request: Request,
    form_id: FormId,
    body: SubmissionCreate,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Submit answers to a published form (409 otherwise). They are checked
    against the form's schema; 422 lists every error with its JSON pointer."""
    # Never called: declared for the document, served by SUBMIT below.
    raise AssertionError("POST /v1/forms/{formId}/submissions is served by SUBMIT")


_FORM_ID = TypeAdapter(FormId)
_IDEMPOTENCY_KEY = TypeAdapter(IdempotencyKeyHeader)
_SUBMISSION_CREATE = TypeAdapter(SubmissionCreate)


def _validated(
    adapter: TypeAdapter[T], value: object, loc: tuple[str, ...], errors: list[Any]
) -> T | None:
    """`value` as `adapter` takes it, or None with its errors, located as
    FastAPI locates a parameter's: the one handler renders them alike."""
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        errors += [{**e, "loc": (*loc, *e["loc"])} for e in error.errors()]
        return None


async def submit(request: Request) -> Response:
    """create_submission, served without FastAPI's routing and dependency
    solving: posting to one form is the path a launch or a giveaway loads,
    and those cost a fifth of its rate (bench/RESULTS.md). It admits the
    caller as every /v1 route does, and validates what create_submission
    declares, as FastAPI would, before anything else."""
    document = await admit(request, Scope.submissions_write, takes_body=True)
    errors: list[Any] = []
    form_id = _validated(_FORM_ID, request.path_params["formId"], ("path", "formId"), errors)
    key = request.headers.get("idempotency-key")
    key = _validated(_IDEMPOTENCY_KEY, key, ("header", "Idempotency-Key"), errors)
    body = _validated(_SUBMISSION_CREATE, document, ("body",), errors)
    if errors or form_id is None or body is None:
        raise RequestValidationError(errors, body=document)
    principal: Principal = request.state.principal
    intake: Intake = services(request).intake
    organization_id = principal.organization_id
    if key is None:
        accepted = await intake.submit(
            organization_id, form_id, body.answers, language=body.language
        )
        return replay(Outcome(201, accepted.body, service.location(form_id, accepted.id)))
    claim = Claim(key, fingerprint("POST", request.url.path, body.model_dump(mode="json")))
    return replay(
        await intake.submit_once(organization_id, form_id, body.answers, claim, body.language)
    )


# Ahead of every other route of the app.
SUBMIT = Route("/v1/forms/{formId}/submissions", submit, methods=["POST"])


@router.get(
    "/{submissionId}",
    response_model=SubmissionDetail,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_submission(
    principal: PrincipalDep, session: ReadSessionDep, form_id: FormId, submission_id: SubmissionId
) -> Response:
    """One submission, with its `ETag` for an edit's `If-Match`."""
    submission = await service.get(session, principal.organization_id, form_id, submission_id)
    response = json(service.to_dict(submission))
    response.headers["ETag"] = service.etag(submission.version)
    return response


class SubmissionPatch(Schema):
    answers: dict[str, Any] = Field(
        description="A JSON merge patch (RFC 7396) of the answers: each key sent replaces "
        "that answer, `null` removes it, keys not sent stay. The result is checked "
        "against the form version the submission answered, like a new submission."
    )


IfMatchHeader = Annotated[
    str | None,
    Header(
        alias="If-Match",
        max_length=512,
        pattern=r"^[\x20-\x7e]+$",
        description="The submission's `ETag`: the edit is refused with 412 if it has "
        "changed since.",
    ),
]


@router.patch(
    "/{submissionId}",
    response_model=SubmissionDetail,
    responses=problem_responses(400, 401, 403, 404, 408, 412, 413, 415, 422, 429),
    openapi_extra=requires(Scope.submissions_write),
)
async def edit_submission(
    principal: PrincipalDep,
    session: SessionDep,
    request: Request,
    form_id: FormId,
    submission_id: SubmissionId,
    body: SubmissionPatch,
    idempotency_key: IdempotencyKeyHeader = None,
    if_match: IfMatchHeader = None,
) -> Response:
    """Correct a submission's answers (a typo, a respondent's right to
    rectification), whatever the form's status. The submission's `version`
    and `updatedAt` move and the change enters the form's change feed."""

    async def work() -> Outcome:
        submission = await service.edit(
            session, principal.organization_id, form_id, submission_id, body.answers, if_match
        )
        return Outcome(200, orjson.dumps(service.to_dict(submission)))

    request_print = body.model_dump(mode="json") | {"ifMatch": if_match}
    await service.queue_for(session, form_id)
    outcome = await idempotent(
        session, principal.organization_id, idempotency_key, request, request_print, work
    )
    response = replay(outcome)
    response.headers["ETag"] = service.etag(orjson.loads(outcome.body)["version"])
    return response


@router.delete(
    "/{submissionId}",
    status_code=204,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_write),
)
async def delete_submission(
    principal: PrincipalDep, session: SessionDep, form_id: FormId, submission_id: SubmissionId
) -> Response:
    """Delete one submission; the form's totals follow at once, and its change
    feed reports it as deleted."""
    await service.delete(session, principal.organization_id, form_id, submission_id)
    return Response(status_code=204)
