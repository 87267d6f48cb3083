"""The public page of each form, at /f/{formId}: no key, rendered on the
server, working without JavaScript, limited per IP like the API.

Every response under /f/ says what a browser may do with it
(HostedPageHeaders): no script, styles and images from here only, forms
posted here only, never sniffed as another type, and shown in a frame only by
the sites the form's organization lists (none by default).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from formsapi.dependencies import ReadSessionDep, SessionDep, client_ip
from formsapi.errors import FormNotFound, RateLimited, ValidationFailed
from formsapi.form.blocks import Block, questions
from formsapi.hosted import service
from formsapi.models import Form, FormStatus, Plan
from formsapi.submission import service as submission_service
from formsapi.submission.service import FormNotAccepting

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")

INPUT_TYPES = {
    "short_text": "text",
    "email": "email",
    "url": "url",
    "phone": "tel",
    "number": "number",
    "date": "date",
}
FormId = Annotated[str, PathParam(max_length=64)]


def _page(request: Request, heading: str, message: str, status: int) -> HTMLResponse:
    return templates.TemplateResponse(
        request,
        "message.html",
        {"title": heading, "heading": heading, "message": message},
        status_code=status,
    )


async def _limited(request: Request) -> HTMLResponse | None:
    """The per-IP limit of anonymous callers, as a page rather than JSON."""
    limiter = request.app.state.rate_limiter
    if not limiter.enabled:
        return None
    try:
        await limiter.check(client_ip(request), Plan.standard)
    except RateLimited as limited:
        page = _page(request, "Too many requests", "Please wait a minute and try again.", 429)
        page.headers.update(limited.headers)
        return page
    return None


def _unavailable(request: Request) -> HTMLResponse:
    return _page(
        request,
        "Form not found",
        "There is no form at this address. Check the link you followed.",
        404,
    )


def _closed(request: Request, title: str) -> HTMLResponse:
    return _page(
        request,
        title,
        "This form is closed and no longer takes answers. Thank you for your interest.",
        410,
    )


@dataclass(frozen=True, slots=True)
class Page:
    """What the template shows of a form: plain values, which outlive a rollback
    (ORM objects expire on one)."""

    id: str
    title: str
    blocks: list[Block]


def _render(
    request: Request, page: Page, values: FormData, errors: dict[str, str], status: int = 200
) -> HTMLResponse:
    titles = {question.key: question.title for question in questions(page.blocks)}
    context = {
        "form": page,
        "blocks": page.blocks,
        "values": values,
        "errors": errors,
        "titles": titles,
        "input_types": INPUT_TYPES,
    }
    return templates.TemplateResponse(request, "form.html", context, status_code=status)


async def _public(request: Request, session: AsyncSession, form_id: str) -> Form | None:
    """The public form at this address, if any; its organization's framing
    rule goes to the response's headers (HostedPageHeaders)."""
    found = await service.public_form(session, form_id)
    if found is None:
        return None
    form, request.state.frame_ancestors = found
    return form


async def _open_form(request: Request, session: AsyncSession, form_id: str) -> Form | Response:
    """The form taking answers at this address, or the page saying why not."""
    form = await _public(request, session, form_id)
    if form is None:
        return _unavailable(request)
    if form.status == FormStatus.closed:
        return _closed(request, form.title)
    return form


@router.get("/f/{form_id}")
async def show_form(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    if (limited := await _limited(request)) is not None:
        return limited
    form = await _open_form(request, session, form_id)
    if isinstance(form, Response):
        return form
    return _render(request, Page(form.id, form.title, service.blocks_of(form)), FormData(), {})


@router.post("/f/{form_id}")
async def submit_form(request: Request, session: SessionDep, form_id: FormId) -> Response:
    """Counted against the limit first, then the whole body read (bounded in size
    and time), and only then the database: a slow client holds no transaction."""
    if (limited := await _limited(request)) is not None:
        return limited
    posted = await request.form()
    form = await _open_form(request, session, form_id)
    if isinstance(form, Response):
        return form
    thanks = RedirectResponse(f"/f/{form.id}/thanks", status_code=303)
    if service.is_spam(posted):
        return thanks  # look like success; store nothing
    page = Page(form.id, form.title, service.blocks_of(form))
    try:
        await submission_service.create(
            session, form.organization_id, form.id, service.answers_from(page.blocks, posted)
        )
    except ValidationFailed as invalid:
        # The counter was already taken for this submission: give it back
        # before the request's session commits.
        await session.rollback()
        errors = {
            e["pointer"].removeprefix("/answers/"): e["detail"]
            for e in invalid.extensions["errors"]
        }
        return _render(request, page, posted, errors, status=422)
    except FormNotAccepting:
        await session.rollback()
        return _closed(request, page.title)
    except FormNotFound:  # deleted between the page lookup and now
        await session.rollback()
        return _unavailable(request)
    return thanks


@router.get("/f/{form_id}/thanks")
async def thanks(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    if (limited := await _limited(request)) is not None:
        return limited
    form = await _public(request, session, form_id)
    if form is None:
        return _unavailable(request)
    return _page(request, "Thank you", f"Your answers to “{form.title}” were received.", 200)


# The policy of every page under /f/: nothing runs, everything comes from here.
_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors "
)


class HostedPageHeaders:
    """Security headers on every response under /f/, errors and static files
    included; frame-ancestors from the organization of the form the route
    found (request.state.frame_ancestors), else 'none'."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/f/"):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                origins = scope.get("state", {}).get("frame_ancestors") or []
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = _CSP + (" ".join(origins) or "'none'")
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "same-origin"
                if not origins:
                    headers["X-Frame-Options"] = "DENY"  # for browsers without CSP 3
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI) -> None:
    """The routes and their stylesheet. HostedPageHeaders is put on by the app,
    outside every layer that may answer on its own (a 413 before any route)."""
    app.include_router(router)
    app.mount(
        "/f/static", StaticFiles(directory=Path(__file__).parent / "static"), name="form-static"
    )
