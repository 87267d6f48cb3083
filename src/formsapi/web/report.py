"""A form's shared report at /r/{token}: its summary as charts for anyone
holding the link, no sign-in. Figures only, the questions its maker left
out missing, small counts withheld (report.service says what a report
shows). A link revoked, expired, unknown or malformed answers one and the
same 404 page. Limited per IP like the hosted form pages, never cached,
never indexed, never framed, and its address (the secret) never sent on
as a referrer."""

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from formsapi.dependencies import ReadSessionDep, client_ip
from formsapi.errors import BadRequest, FormNotFound, RateLimited
from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.models import Plan
from formsapi.report import service as report_service
from formsapi.web.charts import Withhold
from formsapi.web.context import templates
from formsapi.web.summary import draw

router = APIRouter(prefix="/r", include_in_schema=False)

# The policy of the hosted form pages: our own stylesheet, no script of any
# kind needed, posts nowhere, shown in no frame.
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-Robots-Tag": "noindex, nofollow",
}
DateText = Annotated[str | None, Query(max_length=40)]


def _page(request: Request, template: str, status: int, **context: object) -> HTMLResponse:
    response = templates.TemplateResponse(
        request, template, {"viewer": None, **context}, status_code=status
    )
    response.headers.update(HEADERS)
    return response


def _message(request: Request, heading: str, message: str, status: int) -> HTMLResponse:
    return _page(request, "report_message.html", status, heading=heading, message=message)


def _gone(request: Request) -> HTMLResponse:
    return _message(
        request,
        "Report not found",
        "There is no report at this address. The link may have been revoked or have expired.",
        404,
    )


def _day(name: str, text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"“{name}” is a date such as 2026-11-01.") from None


@router.get("/{token}")
async def report_page(
    request: Request,
    session: ReadSessionDep,
    token: str,
    since: DateText = None,
    until: DateText = None,
) -> Response:
    """The report; `since` and `until` are days (UTC), both included."""
    limiter = request.app.state.rate_limiter
    if limiter.enabled:
        try:
            await limiter.check(client_ip(request), Plan.standard)
        except RateLimited as limited:
            wait = "Please wait a minute and try again."
            page = _message(request, "Too many requests", wait, 429)
            page.headers.update(limited.headers)
            return page
    now = utcnow()
    link = await report_service.open_link(session, token, now)
    if link is None:
        return _gone(request)
    try:
        form = await form_service.get(session, link.organization_id, link.form_id)
    except FormNotFound:
        return _gone(request)
    withhold = Withhold(link.min_count)
    problem, drawn, status = None, None, 200
    try:
        first, last = _day("From", since), _day("To", until)
        start = datetime.combine(first, time(), UTC) if first else None
        end = datetime.combine(last + timedelta(days=1), time(), UTC) if last else None
        drawn = await draw(
            session, form, withhold, since=start, until=end, leave_out=link.hidden_questions
        )
    except (BadRequest, OverflowError) as error:
        problem = error.detail if isinstance(error, BadRequest) else "The dates are out of range."
        status = 400
    return _page(
        request,
        "report.html",
        status,
        title=form.title,
        drawn=drawn,
        problem=problem,
        since=since or "",
        until=until or "",
        k=link.min_count,
        expires_at=link.expires_at,
    )
