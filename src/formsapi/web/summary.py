"""A form's Summary page: its answers as charts, with the API's filters, and
(for admins and owners) the links that share it read-only (web.report)."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from formsapi.db.session import ReadSession
from formsapi.errors import BadRequest, Forbidden, NotFound
from formsapi.form import service as form_service
from formsapi.funnel import service as funnel_service
from formsapi.kit.time import parse_timestamp, utcnow
from formsapi.language.blocks import questions
from formsapi.models import Form as FormModel
from formsapi.summary import report as report_service
from formsapi.summary import service as summary_service
from formsapi.summary.buckets import Interval
from formsapi.web import charts
from formsapi.web.charts import Withhold
from formsapi.web.context import DbDep, PathId, ReadDep, back_with, render, shown_link
from formsapi.web.forms import PAGE, SECTION, OrganizationDep
from formsapi.web.pages import Managed, PageRoute, keep

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

FILTER_MAX = 400  # characters of a filter, as the API's query
Filter = Annotated[str | None, Query(max_length=FILTER_MAX)]
DEFAULT_DAYS = 30  # a new link's life
MAX_DAYS = 366


def pick_interval(span: timedelta) -> Interval:
    """The trend's buckets for a range: hours up to two days, days up to about
    three months, weeks up to two years, months beyond."""
    if span <= timedelta(days=2):
        return "hour"
    if span <= timedelta(days=92):
        return "day"
    if span <= timedelta(days=731):
        return "week"
    return "month"


@dataclass(frozen=True, slots=True)
class Drawn:
    """What a summary's page draws: the figures, and the trend (or why not)."""

    summary: dict[str, Any]
    questions: list[charts.QuestionView]
    submissions: str
    trend: charts.Trend | None
    trend_narrow: charts.Trend | None
    trend_note: str | None
    interval: str


@dataclass(frozen=True, slots=True)
class Figures:
    """What a summary's page draws from, before any count is withheld: the
    summary, and the trend's buckets (None, and why, when there is none).
    JSON-able, for a shared report to keep (report.service)."""

    summary: dict[str, Any]
    buckets: list[dict[str, Any]] | None
    interval: str
    note: str | None

    def dumped(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "buckets": self.buckets,
            "interval": self.interval,
            "note": self.note,
        }

    @classmethod
    def loaded(cls, kept: dict[str, Any]) -> "Figures":
        return cls(kept["summary"], kept["buckets"], kept["interval"], kept["note"])


async def figures(
    session: ReadSession,
    form: FormModel,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
    hidden: str | None = None,
    answer: str | None = None,
) -> Figures:
    """The summary with the API's filters, and the submissions over time
    (from `since`, else the form's creation, to `until`, else now)."""
    summary = await summary_service.summary(
        session,
        form.organization_id,
        form.id,
        since=since,
        until=until,
        version=version,
        hidden=hidden,
        answer=answer,
    )
    buckets, note, interval = None, None, "day"
    if hidden is not None or answer is not None:
        note = "No trend with a hidden field or answer filter: it would count every submission."
    else:
        end = until or utcnow()
        start = since or min(form.created_at, end - timedelta(days=1))
        interval = pick_interval(end - start)
        try:
            series = await summary_service.timeseries(
                session,
                form.organization_id,
                form.id,
                interval=interval,
                since=start,
                until=end,
                version=version,
            )
            buckets = series["buckets"]
        except BadRequest:
            note = "The range is too long, or too far in time, to draw a trend: narrow it."
    return Figures(summary, buckets, interval, note)


def drawn(found: Figures, withhold: Withhold, leave_out: list[str] | None = None) -> Drawn:
    """The figures as a page draws them, counts withheld as `withhold` says."""
    trend = narrow = None
    if found.buckets is not None:
        trend = charts.trend(found.buckets, found.interval, withhold)
        narrow = charts.trend(found.buckets, found.interval, withhold, charts.NARROW_WIDTH)
    return Drawn(
        summary=found.summary,
        questions=charts.questions(found.summary, withhold, leave_out or ()),
        submissions=withhold.count(found.summary["submissions"]),
        trend=trend,
        trend_narrow=narrow,
        trend_note=found.note,
        interval=found.interval,
    )


async def draw(
    session: ReadSession,
    form: FormModel,
    withhold: Withhold,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
    hidden: str | None = None,
    answer: str | None = None,
    leave_out: list[str] | None = None,
) -> Drawn:
    """figures() drawn: the summary page's, and a live shared report's."""
    found = await figures(
        session, form, since=since, until=until, version=version, hidden=hidden, answer=answer
    )
    return drawn(found, withhold, leave_out)


def moment(name: str, text: str | None) -> datetime | None:
    """A filter's moment: ISO 8601, a date alone meaning its midnight (UTC)."""
    if not text:
        return None
    try:
        return parse_timestamp(text)
    except ValueError as error:
        raise BadRequest(f"`{name}` {error}.") from None


def _version(text: str | None) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 2**31 - 1:
        raise BadRequest("`version` is a version number: 1, 2, 3...")
    return int(text)


def may_share(managed: Managed) -> None:
    if not managed.viewer.can_share_reports:
        raise Forbidden(
            f"Your role in {managed.organization.name} ({managed.role}) reads summaries; "
            "admins and owners share them."
        )


@router.get("/{form_id}/summary")
async def summary_page(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    form_id: PathId,
    since: Filter = None,
    until: Filter = None,
    version: Filter = None,
    hidden: Filter = None,
    answer: Filter = None,
) -> Response:
    """The form's answers as charts; a filter the API would refuse is said
    on the page, above the filters, with the API's words."""
    form = await form_service.get(session, managed.organization.id, form_id)
    filters = {"since": since, "until": until, "version": version}
    filters |= {"hidden": hidden, "answer": answer}
    drawn, problem, status = None, None, 200
    try:
        drawn = await draw(
            session,
            form,
            Withhold(),
            since=moment("since", since),
            until=moment("until", until),
            version=_version(version),
            hidden=hidden or None,
            answer=answer or None,
        )
    except (BadRequest, NotFound) as error:
        if isinstance(error, NotFound) and not str(error.detail).startswith(f"Form '{form.id}'"):
            raise
        problem, status = error.detail, error.status
    summary_service.prepare(session, form)  # its filters, next, count from memory
    # The funnel follows the hosted page's respondents, whatever they answered.
    funnel = None
    if drawn is not None and not (hidden or answer):
        funnel = charts.funnel(
            await funnel_service.funnel(
                session,
                form.organization_id,
                form.id,
                since=moment("since", since),
                until=moment("until", until),
                version=_version(version),
            )
        )
    blocks = form_service.current(form).blocks
    links = []
    if managed.viewer.can_share_reports:
        now = utcnow()
        links = [
            (link, report_service.status(link, now))
            for link in await report_service.of_form(session, managed.organization.id, form.id)
        ]
    kept = managed.viewer.flash
    return render(
        request,
        "summary/summary.html",
        managed.viewer,
        status,
        section=SECTION.name,
        form=form,
        filters=filters,
        problem=problem,
        drawn=drawn,
        funnel=funnel,
        hidden_keys=[field.key for field in form_service.definition_of(form).hidden_fields],
        questions=[(q.key, q.title) for q in questions(blocks)],
        links=links,
        created=kept.get("created"),
        choice=kept.get("choice", {}),
        default_days=DEFAULT_DAYS,
        max_days=MAX_DAYS,
        default_k=report_service.DEFAULT_MIN_COUNT,
    )


def expiry(expires: str, days: str, on: str, now: datetime) -> datetime:
    """When a new link stops working: after a number of days, or at the end of a date (UTC)."""
    if expires == "date":
        try:
            day = date.fromisoformat(on)
        except ValueError:
            raise BadRequest("Choose the date the link stops working.") from None
        return datetime.combine(day + timedelta(days=1), time(), UTC)
    if not days.isascii() or not days.isdigit() or not 1 <= int(days) <= MAX_DAYS:
        raise BadRequest(f"The link works for 1 to {MAX_DAYS} days.")
    return now + timedelta(days=int(days))


@router.post("/{form_id}/reports")
async def create_report(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    expires: Annotated[str, Form(max_length=10)] = "days",
    days: Annotated[str, Form(max_length=10)] = str(DEFAULT_DAYS),
    on: Annotated[str, Form(max_length=20)] = "",
    min_count: Annotated[str, Form(max_length=10)] = str(report_service.DEFAULT_MIN_COUNT),
    leave_out: Annotated[list[str] | None, Form(max_length=64)] = None,
) -> Response:
    """A new read-only link to the form's summary; its address is shown once."""
    may_share(managed)
    keep(
        request,
        choice={"expires": expires, "days": days, "on": on, "min_count": min_count,
                "leave_out": leave_out or []},
    )  # fmt: skip
    now = utcnow()
    if not min_count.isascii() or not min_count.isdigit() or len(min_count) > 6:
        raise BadRequest("The smallest count shown is a whole number, such as 5.")
    created = await report_service.create(
        session,
        managed.organization.id,
        form_id,
        managed.viewer.user.id,
        expires_at=expiry(expires, days, on, now),
        hidden_questions=leave_out or [],
        min_count=int(min_count),
        now=now,
    )
    # Carried in the session's encrypted one-time message: shown on the next page only.
    return await back_with(
        session,
        managed.viewer,
        f"{PAGE}/{form_id}/summary",
        created={
            "url": shown_link(request, f"/r/{created.token}"),
            "expires_at": created.link.expires_at.isoformat(),
        },
    )


@router.post("/{form_id}/reports/{link_id}/revoke")
async def revoke_report(
    session: DbDep, managed: OrganizationDep, form_id: PathId, link_id: PathId
) -> Response:
    may_share(managed)
    await report_service.revoke(session, managed.organization.id, form_id, link_id, utcnow())
    return await back_with(
        session,
        managed.viewer,
        f"{PAGE}/{form_id}/summary",
        notice="The report link is revoked: it shows nothing from now on.",
    )
