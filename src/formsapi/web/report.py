"""A form's shared report at /r/{token}: its summary as charts for anyone
holding the link, no sign-in. Figures only, the questions its maker left
out missing, small counts withheld, as last released (report.service says
what a report shows, and when its figures are released). No date range:
two ranges a day apart would tell that day's answers. A link revoked,
expired, unknown or malformed answers one and the same 404 page. Limited
per IP like the hosted form pages, never cached, never indexed, never
framed, and its address (the secret) never sent on as a referrer."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from formsapi.db.session import session_scope
from formsapi.dependencies import ReadSessionDep, client_ip
from formsapi.errors import FormNotFound, RateLimited
from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.models import Plan
from formsapi.services import services
from formsapi.summary import report as report_service
from formsapi.web.charts import Withhold
from formsapi.web.context import templates
from formsapi.web.summary import Figures, drawn, figures

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


def _page(request: Request, template: str, status: int, **context: object) -> HTMLResponse:
    response = templates.TemplateResponse(
        request, template, {"viewer": None, **context}, status_code=status
    )
    response.headers.update(HEADERS)
    return response


def _message(request: Request, heading: str, message: str, status: int) -> HTMLResponse:
    return _page(request, "report/message.html", status, heading=heading, message=message)


def _gone(request: Request) -> HTMLResponse:
    return _message(
        request,
        "Report not found",
        "There is no report at this address. The link may have been revoked or have expired.",
        404,
    )


@router.get("/{token}")
async def report_page(request: Request, session: ReadSessionDep, token: str) -> Response:
    """The report, as last released (live with k = 1)."""
    limiter = services(request).rate_limiter
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
    released_at = None
    if report_service.live(link):
        found = await figures(session, form)
    else:
        release = report_service.released(link)
        if await report_service.release_due(session, link, now):
            fresh = (await figures(session, form)).dumped()
            await session.close()  # its connection back before the write takes one
            async with session_scope(services(request).sessionmaker) as writer:
                release = await report_service.publish(writer, link, fresh, now)
        assert release is not None  # released now if it never was
        found, released_at = Figures.loaded(release.figures), release.at
    return _page(
        request,
        "report/report.html",
        200,
        title=form.title,
        drawn=drawn(found, Withhold(link.min_count), link.hidden_questions),
        k=link.min_count,
        released_at=released_at,
        expires_at=link.expires_at,
    )
