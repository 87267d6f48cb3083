from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, requires
from formsapi.form.endpoints import ERRORS_404, FormId, json
from formsapi.submission.endpoints import Timestamp
from formsapi.summary import service
from formsapi.summary.schemas import FormAnswerSummary

router = APIRouter(prefix="/forms/{formId}/summary", tags=["Summaries"], route_class=GuardedRoute)


@router.get(
    "",
    response_model=FormAnswerSummary,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_summary(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    since: Annotated[
        datetime | None,
        Timestamp,
        Query(description="ISO 8601: submissions at or after it. No offset means UTC."),
    ] = None,
    until: Annotated[
        datetime | None,
        Timestamp,
        Query(description="ISO 8601: submissions before it (a half-open range with `since`)."),
    ] = None,
    version: Annotated[
        int | None,
        Query(
            ge=1,
            le=2**31 - 1,
            description="Only this version's submissions, summarized by its questions.",
        ),
    ] = None,
    hidden: Annotated[
        str | None,
        Query(
            max_length=400,
            description="A hidden field's key, a colon and its value: `utm_source:newsletter`.",
        ),
    ] = None,
    answer: Annotated[
        str | None,
        Query(
            max_length=400,
            description="One answer, as key:value: `plan:business` (a multiple choice: those "
            "who chose it among others), `consent:yes`, `rating:5`, `survey.speed:good` "
            "(a matrix row).",
        ),
    ] = None,
) -> Response:
    """Answer summaries of the form's submissions: for each question what fits
    its type (counts per option, distributions, means, medians, the NPS,
    number statistics, per-row counts of a matrix, mean ranks), how many
    answered and skipped it, each variable's distribution, how many reached
    each ending. Counted when asked, in one statement: an edit or a delete
    shows at once. Filters combine."""
    return json(
        await service.summary(
            session,
            principal.organization_id,
            form_id,
            since=since,
            until=until,
            version=version,
            hidden=hidden,
            answer=answer,
        )
    )
