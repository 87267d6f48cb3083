from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, requires
from formsapi.funnel import service as funnel_service
from formsapi.funnel.schemas import Funnel
from formsapi.routing import ERRORS_404, FormId, Timestamp, json
from formsapi.summary import service
from formsapi.summary.buckets import Interval
from formsapi.summary.schemas import FormAnswerSummary, TimeSeries

router = APIRouter(
    prefix="/v1/forms/{formId}/summary", tags=["Summaries"], route_class=GuardedRoute
)


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
    each ending. Exact when asked, edits and deletes included: added up from
    counts kept with every change, or, filtered by a hidden field or an
    answer, counted from the form's submissions. Filters combine."""
    return Response(
        await service.summary_json(
            session,
            principal.organization_id,
            form_id,
            since=since,
            until=until,
            version=version,
            hidden=hidden,
            answer=answer,
        ),
        media_type="application/json",
    )


@router.get(
    "/timeseries",
    response_model=TimeSeries,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_timeseries(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    interval: Annotated[
        Interval, Query(description="hour, day, week (from Monday) or month.")
    ] = "day",
    tz: Annotated[
        str,
        Query(
            max_length=64,
            description="An IANA time zone (Europe/Paris): days, weeks and months are its "
            "own, 23 or 25 hours long when its clocks change.",
        ),
    ] = "UTC",
    since: Annotated[
        datetime | None,
        Timestamp,
        Query(
            description="ISO 8601; the series starts with the bucket holding it. Default: "
            "48 hours, 30 days, 26 weeks or 365 days before `until`."
        ),
    ] = None,
    until: Annotated[
        datetime | None,
        Timestamp,
        Query(
            description="ISO 8601; the series ends with the bucket holding the moment "
            "before it. Default: now."
        ),
    ] = None,
    question: Annotated[
        str | None,
        Query(
            max_length=64,
            description="A choice, yes/no, rating, scale, NPS or number question's key: its "
            "counts per option, or its mean, in each bucket.",
        ),
    ] = None,
    version: Annotated[
        int | None,
        Query(ge=1, le=2**31 - 1, description="Only this version's submissions."),
    ] = None,
) -> Response:
    """Submissions per hour, day, week or month in a time zone, every bucket
    of the range present (at most 1,000), and with `question` that question's
    answers in each: exact, edits and deletes included, as the summary."""
    return json(
        await service.timeseries(
            session,
            principal.organization_id,
            form_id,
            interval=interval,
            time_zone=tz,
            since=since,
            until=until,
            question=question,
            version=version,
        )
    )


@router.get(
    "/funnel",
    response_model=Funnel,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_funnel(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    since: Annotated[
        datetime | None,
        Timestamp,
        Query(
            description="ISO 8601: respondents first served the form at or after it, from the "
            "start of its UTC hour. No offset means UTC."
        ),
    ] = None,
    until: Annotated[
        datetime | None,
        Timestamp,
        Query(description="ISO 8601: before it, to the end of its UTC hour (half-open)."),
    ] = None,
    version: Annotated[
        int | None,
        Query(ge=1, le=2**31 - 1, description="Only the steps taken on this version."),
    ] = None,
) -> Response:
    """The funnel of the form's hosted page: views of its first page,
    starts, completions, the completion rate, the median time to complete,
    and for each page how many reached it and how many stopped there. Read
    from counts kept as respondents go (views and starts within 5 seconds,
    the rest in the same transaction as their answers); submissions made
    through the API are not part of it."""
    return json(
        await funnel_service.funnel(
            session, principal.organization_id, form_id, since=since, until=until, version=version
        )
    )
