"""The public page of each form, at /f/{formId}: no key, rendered on the
server, working without JavaScript, limited per IP like the API.

Every response under /f/ says what a browser may do with it
(HostedPageHeaders): no script, styles and images from here only, forms
posted here only, never sniffed as another type, and shown in a frame only by
the sites the form lists, or else its organization (none by default).
"""

import re
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from email.headerregistry import Address
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qs, quote

import orjson
from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData, MultiDict, MutableHeaders
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from formsapi.admission import service as admission_service
from formsapi.admission.service import AlreadyAnswered, InvitationUsed, SecretKeyNeeded
from formsapi.db.session import session_scope
from formsapi.dependencies import ReadSessionDep, client_ip
from formsapi.errors import (
    Forbidden,
    FormNotFound,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ValidationFailed,
)
from formsapi.file import service as file_service
from formsapi.file.http import receive
from formsapi.form import limits
from formsapi.form import service as form_service
from formsapi.form.limits import QuotaFull
from formsapi.form.service import FormNotAccepting
from formsapi.form.work import OrganizationBusy, worked_out
from formsapi.funnel import service as funnel_service
from formsapi.funnel import steps as funnel_steps
from formsapi.hosted import ending_pass, guard, once, service, stamp
from formsapi.kit.mail import MailNotSent
from formsapi.kit.time import utcnow
from formsapi.language import flow, translation
from formsapi.language.blocks import Block, FileUpload, parts, questions
from formsapi.language.compiled import Compiled
from formsapi.language.cost import NO_COST, Cost
from formsapi.language.definition import DEFAULT_LANGUAGE
from formsapi.language.translation import MESSAGES
from formsapi.models import File, Form, Plan
from formsapi.partial import service as partial_service
from formsapi.partial.service import LinkUsed
from formsapi.services import services
from formsapi.submission.validation import validate_submission
from formsapi.user import service as user_service

T = TypeVar("T")


class _PageRoute(APIRoute):
    """A route of the public page: an organization with too much work
    waiting (form/work.py) is answered with a page asking to try again, not
    the API's problem document."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handle(request)
            except OrganizationBusy as busy:
                answer = _page(request, "Please try again", _BUSY, busy.status)
                answer.headers.update(busy.headers)
                return answer

        return page


_BUSY = "This form has many people answering at this moment. Wait a second and try again."
router = APIRouter(include_in_schema=False, route_class=_PageRoute)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")

INPUT_TYPES = {
    "short_text": "text",
    "email": "email",
    "url": "url",
    "phone": "tel",
    "number": "number",
    "date": "date",
    "time": "time",
    "date_time": "datetime-local",
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
    limiter = services(request).rate_limiter
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


def _closed(request: Request, form: Form, title: str | None = None) -> HTMLResponse:
    """The page of a form taking no answers: its message before opening, or
    after closing (410, as a closed form's), judged by the time."""
    now = utcnow()
    if limits.state(form, now) == limits.State.before and form.opens_at is not None:
        when = form.opens_at.strftime("%d %B %Y at %H:%M UTC")
        message = form.message_before_opening or f"This form opens on {when}. Come back then."
        return _page(request, title or form.title, message, 200)
    return _page(
        request,
        title or form.title,
        form.message_after_closing
        or "This form is closed and no longer takes answers. Thank you for your interest.",
        410,
    )


@dataclass(frozen=True, slots=True)
class Page:
    """What the template shows of a form: plain values, which outlive a rollback
    (ORM objects expire on one), in the language chosen."""

    id: str
    organization_id: str
    title: str
    blocks: list[Block]
    lang: str = DEFAULT_LANGUAGE
    # The switcher's choices (tag, name); empty for a form in one language.
    languages: tuple[tuple[str, str], ...] = ()
    messages: Mapping[str, str] = field(default_factory=lambda: MESSAGES)
    challenge: bool = False  # the page asks for a proof of work (hosted/guard.py)
    # The quotas that show an option as full once its places are taken (closeOption).
    closing: tuple[tuple[str, str, int], ...] = ()  # (question, option, limit)
    # The email question a form taking one response per address needs answered.
    email_once: str | None = None
    honeypot: str = ""  # its field's name (hosted.service.honeypot)
    # What checking its answers and drawing its pages cost (language/cost.py).
    cost: Cost = NO_COST


def _language(request: Request, version: Compiled, posted: FormData | None = None) -> str:
    """The language of a page: the one switched to, or carried from page to
    page, or the link's `?lang=`, or the browser's Accept-Language, or the
    form's own."""
    available = version.languages
    if len(available) > 1:
        sent = [posted.get("_switch"), posted.get("_lang")] if posted is not None else []
        for wanted in (*sent, request.query_params.get("lang")):
            if isinstance(wanted, str) and (found := translation.pick(wanted, available)):
                return found
        header = request.headers.get("accept-language", "")[:500]
        return translation.negotiate(header, available) or available[0]
    return available[0]


def _shown(request: Request, form: Form, version: Compiled, lang: str) -> tuple[Compiled, Page]:
    """The version in `lang`, and the page that shows it."""
    shown = version.in_language(lang)
    texts = version.definition.translations.get(lang)
    given = texts.messages if texts is not None else version.definition.messages
    messages = {**MESSAGES, **{str(name): text for name, text in given.items()}}
    title = texts.title if texts is not None and texts.title else form.title
    choices = tuple(
        (tag, translation.NAMES.get(tag.split("-")[0], tag)) for tag in version.languages
    )
    page = Page(
        form.id,
        form.organization_id,
        title,
        shown.blocks,
        lang,
        choices if len(choices) > 1 else (),
        messages,
        form.challenge,
        tuple(
            (quota["question"], quota["option"], quota["limit"])
            for quota in form.quotas or []
            if quota["action"] == "closeOption"
        ),
        form.one_response_question if form.one_response_by == "email" else None,
        service.honeypot(services(request).secret_box, form.id),
        version.cost,
    )
    return shown, page


async def _full(request: Request, page: Page) -> set[tuple[str, str]]:
    """The options of the page's form with no place left (shown disabled)."""
    if not page.closing:
        return set()
    async with services(request).read_sessionmaker() as session:
        return await form_service.full_options(session, page.organization_id, page.id, page.closing)


async def _render(
    request: Request,
    page: Page,
    values: Any,
    errors: dict[str, str],
    status: int = 200,
    step: "_Step | None" = None,
    resume: str | None = None,
    action: str | None = None,
    fields: Mapping[str, str] | None = None,
    journey: "Journey | None" = None,
) -> HTMLResponse:
    """The page of the form, drawn (its `step` worked out first) on the
    loop or, for a costly form, on the fair-share thread."""
    uploaded = await _uploaded(request, page, step.blocks_here if step else page.blocks, values)
    full = await _full(request, page)
    required, invalid = page.messages["required"], page.messages["invalid"]
    errors = {
        key: required if text == "is required" else invalid or text for key, text in errors.items()
    }

    def draw() -> str:
        shown = step.made() if step is not None else None
        blocks = shown.blocks if shown else page.blocks
        context = {
            "form": page,
            "blocks": blocks,
            "step": shown,
            "resume": resume,
            "values": values,
            "errors": errors,
            "titles": {key: part.title for key, part in parts(blocks)},  # recalled
            "input_types": INPUT_TYPES,
            "uploaded": uploaded,
            # The builder's preview posts to itself, and says it stores nothing.
            "action": action or f"/f/{page.id}",
            "preview": action is not None,
            "fields": fields or {},  # the preview's own (the settings area's CSRF token)
            "journey": journey,
            "full": full,
        }
        return _FORM_TEMPLATE.render(context)

    html = await _worked(request, page.organization_id, page.cost.page, draw)
    response = HTMLResponse(html, status_code=status)
    if resume is not None:  # the page holds the secret of their link
        response.headers["Cache-Control"] = "no-store"
    return response


_FORM_TEMPLATE = templates.get_template("form.html")


@dataclass(frozen=True, slots=True)
class _Step:
    """A page of the form as the answers so far show it (service.step), made
    where the page is drawn."""

    version: Compiled  # in the page's language
    answers: dict[str, Any]
    page: int
    run: flow.Run
    seed: str

    def made(self) -> service.Step:
        return service.step(self.version, self.answers, self.page, self.run, self.seed)

    @property
    def blocks_here(self) -> list[Block]:
        layout = self.version.layout
        return [layout.blocks[position] for position in layout.page_positions(self.page)]


async def _worked(request: Request, organization_id: str, cost: int, work: Callable[[], T]) -> T:
    """`work()` where a form's CPU work runs (form/work.py)."""
    return await worked_out(services(request).fair_share, organization_id, cost, work)


async def _walked(
    request: Request, page: Page, version: Compiled, answers: dict[str, Any], today: date
) -> flow.Run:
    """The answers' walk through the form (language/flow.py)."""
    return await _worked(
        request,
        page.organization_id,
        page.cost.walk,
        partial(flow.walk, version.layout, answers, today),
    )


async def _uploaded(
    request: Request, page: Page, blocks: list[Block], values: Any
) -> dict[str, File]:
    """The files the page's answers name, to show by name."""
    ids = [
        file_id
        for question in questions(blocks)
        if isinstance(question, FileUpload)
        for value in values.getlist(question.key)
        for file_id in str(value).split(",")
        if file_id
    ]
    if not ids:
        return {}
    async with services(request).read_sessionmaker() as session:
        found = await file_service.named(session, page.organization_id, page.id, ids[:100])
    return {file.id: file for file in found}


def _values(answers: dict[str, Any]) -> MultiDict:
    """Answers as the template reads posted fields (get, getlist)."""
    return MultiDict(
        [
            (key, item)
            for key, value in answers.items()
            for item in (str(value).split(",") if isinstance(value, str) else [str(value)])
        ]
    )


async def _public(request: Request, session: AsyncSession, form_id: str) -> Form | None:
    """The public form at this address, if any; its framing rule (its own
    list, or its organization's) goes to the response's headers
    (HostedPageHeaders)."""
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
    if limits.state(form, utcnow()) != limits.State.open:
        return _closed(request, form)
    return form


@dataclass(frozen=True, slots=True)
class Journey:
    """A respondent's way through the funnel, carried from page to page in
    hidden inputs: the stamp of when their first page was served
    (hosted.stamp), and whether their start was counted already (by the
    page's script, or by an earlier post)."""

    stamp: str | None
    served_at: datetime | None
    started: bool
    # The token of the invitation link they came through (hosted/once.py).
    invite: str | None = None

    @property
    def at(self) -> datetime:
        """The hour their steps count in: their first page's, else now's."""
        return self.served_at or utcnow()


def _journey_of(
    request: Request, form: Form, posted: FormData, invite: str | None = None
) -> Journey:
    text = posted.get("_stamp")
    served = stamp.read(services(request).secret_box, form.id, text, utcnow())
    kept = text if isinstance(text, str) and served is not None else None
    return Journey(kept, served, started=posted.get("_started") == "1", invite=invite)


def _locked(
    request: Request,
    form: Form,
    query: str = "",
    *,
    error: str | None = None,
    status: int = 200,
    resume: str | None = None,
) -> HTMLResponse:
    """The page asking for the form's password, carrying the link's query
    (hidden fields, an invitation) or the resume link back to where it was."""
    context = {
        "title": form.title,
        "form_id": form.id,
        "next": once.next_query(query),
        "resume": resume,
        "error": error,
    }
    response = templates.TemplateResponse(request, "password.html", context, status_code=status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _secret_page(response: Response) -> Response:
    """A page whose address or form holds a secret (an invitation's token)."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


# User agents that say they are robots: their loads are not views.
_ROBOT = re.compile(r"bot|crawl|spider|slurp|facebookexternalhit", re.IGNORECASE)


@router.get("/f/{form_id}")
async def show_form(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    """The first page; hidden fields and prefilled answers come from the
    link's query string. Each load is a view of the form's funnel (nothing
    of the visitor's kept: it is a count), and the page carries the stamp
    of when it was served."""
    if (limited := await _limited(request)) is not None:
        return limited
    form = await _open_form(request, session, form_id)
    if isinstance(form, Response):
        return form
    admitted = await once.admit(
        request,
        form,
        request.query_params.get(once.INVITE),
        _page,
        lambda: _locked(request, form, request.url.query),
    )
    if isinstance(admitted, Response):
        return admitted
    version = await form_service.version_of(
        services(request).read_sessionmaker, services(request).fair_share, form
    )
    shown, page = _shown(request, form, version, _language(request, version))
    carried = {
        **service.carried_from(version, request.query_params, prefill=True),
        **admitted.fields(version),
    }
    now = utcnow()
    run = await _walked(request, page, version, carried, now.date())
    step = _Step(shown, carried, 0, run, service.new_seed())
    if request.method == "GET" and not _ROBOT.search(request.headers.get("user-agent", "")[:500]):
        services(request).funnel.add(
            form.organization_id, form.id, form.version, now, funnel_steps.VIEW
        )
    made = stamp.make(services(request).secret_box, form.id, now)
    journey = Journey(made, now, started=False, invite=admitted.token)
    shown_page = await _render(request, page, _values(carried), {}, step=step, journey=journey)
    return _secret_page(shown_page) if admitted.token else shown_page


def _page_of(posted: FormData, version: Compiled) -> int | None:
    """The page a post comes from; None for a post of the whole form at once
    (a page before pages, or a client posting every answer)."""
    raw = posted.get("_page")
    if not isinstance(raw, str) or not (raw.isascii() and raw.isdigit() and len(raw) <= 4):
        return None
    return min(int(raw), len(version.layout.starts) - 1)


async def _received(
    request: Request, session: AsyncSession, form_id: str
) -> tuple[FormData, Form] | Response:
    """A post to a form taking answers, counted against the limit first, its
    body read whole (bounded in size and time), and only then the form
    looked up; or the page saying why not."""
    if (limited := await _limited(request)) is not None:
        return limited
    posted = await request.form()
    form = await _open_form(request, session, form_id)
    # The lookup's connection goes back before anything takes one to write
    # (the intake's batch): posts holding theirs would starve a small pool.
    await session.close()
    return form if isinstance(form, Response) else (posted, form)


@router.post("/f/{form_id}")
async def submit_form(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    """Counted against the limit first, then the whole body read (bounded in size
    and time), and only then the database: a slow client holds no transaction.

    A page's post moves back or on (the server walks the logic: no script),
    checking only that page's answers; the last page's post submits."""
    received = await _received(request, session, form_id)
    if isinstance(received, Response):
        return received
    posted, form = received
    if (refused := await guard.refused_post(request, form, posted, _page)) is not None:
        return refused
    admitted = await once.admit(
        request,
        form,
        posted.get(once.INVITE_FIELD),
        _page,
        lambda: _locked(request, form, error="Enter the form's password first.", status=401),
    )
    if isinstance(admitted, Response):
        return admitted
    version = await form_service.version_of(
        services(request).read_sessionmaker, services(request).fair_share, form
    )
    shown, page = _shown(request, form, version, _language(request, version, posted))
    today = utcnow().date()
    answers = {
        **service.answers_from(version.blocks, posted),
        **service.carried_from(version, posted, prefill=False),
        # What the link says, whatever the page posted.
        **admitted.fields(version),
    }
    current = _page_of(posted, version)
    seed = service.seed_of(posted)
    token = _token_of(posted)
    journey = _journey_of(request, form, posted, admitted.token)
    if posted.get("_switch"):  # the same page, in the language switched to
        run = await _walked(request, page, version, answers, today)
        step = _Step(shown, answers, current, run, seed) if current is not None else None
        return await _render(
            request, page, _values(answers), {}, step=step, resume=token, journey=journey
        )
    if not journey.started:  # a first post, without the page's script: they began
        claim = stamp.claim(journey.stamp) if journey.stamp is not None else None
        services(request).funnel.start(
            form.organization_id, form.id, form.version, journey.at, claim
        )
        journey = replace(journey, started=True)
    if current is not None:
        run = await _walked(request, page, version, answers, today)  # the one walk of a page's move
        if posted.get("_go") == "save":
            if len(version.layout.starts) < 2:
                return _page(request, page.title, "This form has one page: send it.", 400)
            kept = await _keep(request, form, version, answers, current, current, token, journey)
            if isinstance(kept, Response):
                return kept
            return _saved(request, form, kept, version.definition.resume_days, admitted.token)
        going, errors = await _worked(
            request,
            form.organization_id,
            page.cost.walk,
            partial(_destination, version, answers, current, posted, run, today),
        )
        asks_email = form.one_response_question in service.page_keys(version, current)
        if (
            not errors
            and going is not None
            and asks_email
            and (taken := await once.email_taken(request, form, answers)) is not None
        ):
            errors = {taken: _EMAIL_TAKEN}
        if errors:
            step = _Step(shown, answers, current, run, seed)
            return await _render(
                request, page, _values(answers), errors, 422, step, token, journey=journey
            )
        if going is not None:
            # Each page reached is kept: where they stop shows, and a link resumes it.
            kept = await _keep(request, form, version, answers, going, current, token, journey)
            if isinstance(kept, Response):
                return kept
            step = _Step(shown, answers, going, run, seed)
            return await _render(
                request, page, _values(answers), {}, step=step, resume=kept, journey=journey
            )
        answers = service.on_path(version, answers, run)
    now = utcnow()
    if refused := await guard.refused_too_fast(request, form, journey.served_at, now, _page):
        return refused
    if (refused := await guard.refused_challenge(request, form, posted, _page)) is not None:
        return refused
    completes = partial_service.token_hash(token) if token else None
    completion = funnel_steps.Completion(
        funnel_steps.hour_of(journey.at),
        None if journey.served_at is None else (now - journey.served_at).total_seconds(),
        current or 0,
    )
    # One response per address: taken before the answers are written (so two
    # posts at once cannot both pass), and given back if they are not.
    claimed = form.one_response_by == "ip"
    if claimed and not await once.claim_ip(request, form):
        return once.ip_taken_page(request, form, _page)
    spends = admitted.invitation.hash if admitted.invitation is not None else None
    try:
        try:
            submission = await services(request).intake.submit(
                form.organization_id, form.id, answers, completes, page.lang, completion, spends
            )
        except BaseException:
            if claimed:
                await once.release_ip(request, form)
            raise
    except LinkUsed:
        return _page(request, page.title, "These answers were sent already. Thank you.", 409)
    except AlreadyAnswered:
        return _page(
            request,
            page.title,
            "A response from this email address was taken already: this form takes one per "
            "address. Thank you.",
            409,
        )
    except SecretKeyNeeded:  # the rule was set, then the server's key taken away
        return _page(
            request, page.title, "This form cannot take answers now. Please try later.", 503
        )
    except InvitationUsed:
        return _page(
            request,
            "Already answered",
            "This invitation link was used already: its answers were sent. Thank you.",
            409,
        )
    except ValidationFailed as invalid:
        errors = _errors(invalid)
        if current is None:
            return await _render(request, page, posted, errors, status=422, journey=journey)
        run = await _walked(request, page, version, answers, today)
        first = _first_page_with(version, run, errors)
        step = _Step(shown, answers, first, run, seed)
        return await _render(
            request, page, _values(answers), errors, 422, step, token, journey=journey
        )
    except QuotaFull as full:
        # Those who chose a full option of a quota that ends the form: its message.
        return _page(request, page.title, full.detail, 200)
    except FormNotAccepting:
        async with services(request).read_sessionmaker() as session:
            now_form = await _public(request, session, form_id)
        return _closed(request, now_form or form, page.title)
    except FormNotFound:  # deleted between the page lookup and now
        return _unavailable(request)
    ending = _ending(request, form, shown, submission.answers, submission.ending, page)
    if form.one_response_by == "cookie":
        once.set_answered(request, ending, form)
    return ending


async def preview(
    request: Request,
    form: Form,
    version: Compiled,
    action: str,
    posted: FormData | None,
    fields: Mapping[str, str],
) -> HTMLResponse:
    """The hosted page of a form as `version` (the builder's draft) would
    show it, walked page by page as submit_form walks it, its logic
    included, posting to `action`; its end shows the ending the logic
    reaches instead of storing anything (no submission, no saved
    progress, no file kept)."""
    lang = _language(request, version, posted)
    shown, page = _shown(request, form, version, lang)
    today = utcnow().date()
    if posted is None:
        carried = service.carried_from(version, request.query_params, prefill=True)
        run = await _walked(request, page, version, carried, today)
        step = _Step(shown, carried, 0, run, service.new_seed())
        return await _render(
            request, page, _values(carried), {}, step=step, action=action, fields=fields
        )
    answers = {
        **service.answers_from(version.blocks, posted),
        **service.carried_from(version, posted, prefill=False),
    }
    current, seed = _page_of(posted, version), service.seed_of(posted)
    run = await _walked(request, page, version, answers, today)
    if current is not None and not posted.get("_switch"):
        going, errors = await _worked(
            request,
            form.organization_id,
            page.cost.walk,
            partial(_destination, version, answers, current, posted, run, today),
        )
        if errors or going is not None:
            shown_page = current if errors or going is None else going
            step = _Step(shown, answers, shown_page, run, seed)
            status = 422 if errors else 200
            return await _render(
                request, page, _values(answers), errors, status, step, action=action, fields=fields
            )
        answers = service.on_path(version, answers, run)
    elif current is not None:  # the same page, in the language switched to
        step = _Step(shown, answers, current, run, seed)
        return await _render(
            request, page, _values(answers), {}, step=step, action=action, fields=fields
        )
    checked = await _worked(
        request,
        form.organization_id,
        page.cost.walk,
        partial(validate_submission, version, answers, today),
    )
    if checked.errors:
        errors = {e.pointer.removeprefix("/answers/"): e.detail for e in checked.errors}
        first = _first_page_with(version, run, errors)
        step = _Step(shown, answers, first, run, seed)
        return await _render(
            request, page, _values(answers), errors, 422, step, action=action, fields=fields
        )
    ending = service.ending_of(shown, checked.ending)
    values = service.recall_values(shown, checked.stored, {})
    if ending is not None and ending.redirect is not None:
        where = service.recall(ending.redirect, values, encode=True)
        return _page(request, page.title, f"Preview: respondents would now go to {where}", 200)
    title = page.messages["thanks"]
    text = ""
    if ending is not None:
        title = service.recall(ending.title or title, values)
        text = service.recall(ending.text or "", values)
    return _page(request, title, f"{text} (Preview of the draft: nothing was stored.)".strip(), 200)


def _errors(invalid: ValidationFailed) -> dict[str, str]:
    return {
        e["pointer"].removeprefix("/answers/"): e["detail"] for e in invalid.extensions["errors"]
    }


def _destination(
    version: Compiled,
    answers: dict[str, Any],
    current: int,
    posted: FormData,
    run: flow.Run,
    today: date,
) -> tuple[int | None, dict[str, str]]:
    """Where a page's post goes (`run`: the answers' walk): back, or on once
    the page's answers hold (else its errors, staying); None past the last
    page: submit."""
    if posted.get("_go") == "back":
        return service.neighbour(run, current, -1) or 0, {}
    reached = service.on_path(version, answers, run)
    checked = validate_submission(version, reached, today)
    on_page = service.page_keys(version, current)
    errors = {
        e.pointer.removeprefix("/answers/"): e.detail
        for e in checked.errors
        if e.pointer.removeprefix("/answers/") in on_page
    }
    if errors:
        return current, errors
    return service.neighbour(run, current, +1), {}


def _token_of(posted: FormData) -> str | None:
    raw = posted.get("_resume")
    return raw if isinstance(raw, str) and partial_service.token_hash(raw) else None


async def _keep(
    request: Request,
    form: Form,
    version: Compiled,
    answers: dict[str, Any],
    page: int,
    came_from: int,
    token: str | None,
    journey: Journey,
) -> str | Response:
    """Keep a respondent's answers so far and the page they are on: their
    resume token, or the page saying why not. A respondent's first page
    counts against their address's allowance of new partials. A page further
    than any they reached before is counted in the funnel, in the same
    transaction."""
    if token is None:
        wait = await services(request).partial_throttle.attempt(form.id, client_ip(request))
        if wait:
            refused = _page(request, form.title, "Please wait a minute and try again.", 429)
            refused.headers["Retry-After"] = str(wait)
            return refused
    now = utcnow()
    try:
        async with session_scope(services(request).sessionmaker) as session:
            kept = await partial_service.save(
                session,
                form.organization_id,
                form.id,
                token,
                answers,
                page,
                now,
                version.definition.resume_days,
            )
            until = now + timedelta(days=version.definition.resume_days)
            await file_service.keep_for(
                session, form.organization_id, form.id, version.blocks, answers, until
            )
            before = came_from if kept.reached_before is None else kept.reached_before
            await funnel_service.went_to(
                session, form.organization_id, form.id, version.version, journey.at, before, page
            )
            return kept.token
    except LinkUsed:
        return _page(request, form.title, "These answers were sent already. Thank you.", 409)
    except PayloadTooLarge as large:
        return _page(request, form.title, large.detail, 413)


def _resume_url(request: Request, form_id: str, token: str, invite: str | None = None) -> str:
    # The configured address, never the request's Host header (a client's to choose).
    base = services(request).settings.public_url.rstrip("/")
    # An invitation's token rides along: the form takes answers through it only.
    query = f"?{once.INVITE}={invite}" if invite else ""
    return f"{base}/f/{form_id}/resume/{token}{query}"


def _saved(
    request: Request, form: Form, token: str, days: int, invite: str | None = None
) -> HTMLResponse:
    """The page after "Save and continue later": the link, or where to mail it,
    and until when it works (the form's resumeDays from now)."""
    mailer = services(request).mailer
    until = utcnow() + timedelta(days=days)
    context = {
        "until": f"{until.day} {until:%B %Y}",
        "title": form.title,
        "form_id": form.id,
        "token": token,
        "url": None if mailer.enabled else _resume_url(request, form.id, token, invite),
        "invite": invite,
        "mail": mailer.enabled,
    }
    response = templates.TemplateResponse(request, "saved.html", context)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/f/{form_id}/resume/{token}")
async def resume_form(
    request: Request,
    session: ReadSessionDep,
    form_id: FormId,
    token: Annotated[str, PathParam(max_length=64)],
) -> Response:
    """A respondent's link back to a form with pages: it opens where they
    left off, with their answers."""
    if (limited := await _limited(request)) is not None:
        return limited
    form = await _open_form(request, session, form_id)
    if isinstance(form, Response):
        return form
    admitted = await once.admit(
        request,
        form,
        request.query_params.get(once.INVITE),
        _page,
        lambda: _locked(request, form, request.url.query, resume=token),
    )
    if isinstance(admitted, Response):
        return admitted
    try:
        resumed = await partial_service.resume(
            session, form.organization_id, form.id, token, utcnow()
        )
    except LinkUsed:
        return _page(request, form.title, "These answers were sent already. Thank you.", 410)
    except NotFound as missing:
        return _page(request, "Link not valid", missing.detail, 404)
    version = await form_service.version_of(
        services(request).read_sessionmaker, services(request).fair_share, form
    )
    shown, page = _shown(request, form, version, _language(request, version))
    answers = resumed.answers
    run = await _walked(request, page, version, answers, utcnow().date())
    page_number = min(resumed.page, len(version.layout.starts) - 1)
    step = _Step(shown, answers, page_number, run, service.new_seed())
    # Their stamp stayed on the page they left: timed from their first save.
    began = resumed.started_at
    made = stamp.make(services(request).secret_box, form.id, began)
    journey = Journey(made, began, True, invite=admitted.token)
    response = await _render(
        request, page, _values(answers), {}, step=step, resume=token, journey=journey
    )
    response.headers["Referrer-Policy"] = "no-referrer"  # its address holds the secret
    return response


@router.post("/f/{form_id}/resume-link")
async def mail_resume_link(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    """Mail a respondent the link back to their answers (when mail is set up)."""
    received = await _received(request, session, form_id)
    if isinstance(received, Response):
        return received
    posted, form = received
    if not once.unlocked(request, form):
        return _locked(request, form, error="Enter the form's password first.", status=401)
    token = _token_of(posted)
    email = str(posted.get("email") or "").strip()
    mailer = services(request).mailer
    if token is None or not mailer.enabled:
        return _page(request, "Link not valid", "Save your answers again to get a link.", 400)
    if not _is_address(email):
        return _page(request, form.title, "Enter an email address such as name@example.com.", 422)
    try:  # a link to answers kept now, or none: a made-up token mails nothing
        async with services(request).read_sessionmaker() as reader:
            await partial_service.resume(reader, form.organization_id, form.id, token, utcnow())
    except LinkUsed:
        return _page(request, form.title, "These answers were sent already. Thank you.", 410)
    except NotFound as missing:
        return _page(request, "Link not valid", missing.detail, 404)
    wait = await services(request).resume_mail_throttle.attempt(email, client_ip(request))
    if wait:
        page = _page(request, form.title, "Too many links were sent. Try again later.", 429)
        page.headers["Retry-After"] = str(wait)
        return page
    invite = posted.get(once.INVITE_FIELD)
    carried = invite if isinstance(invite, str) and admission_service.token_hash(invite) else None
    url = _resume_url(request, form.id, token, carried)
    text = f"To go on with “{form.title}” where you left off, open:\n\n{url}\n"
    try:
        await mailer.send(email, f"Your link back to “{form.title}”", text)
    except MailNotSent:
        return _page(request, form.title, "The link could not be sent. Please try again.", 503)
    return _page(
        request,
        form.title,
        f"We sent a link to {email}. It opens the form where you left off.",
        200,
    )


# No part can match in two ways: linear in the input, whatever it holds.
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")


def _is_address(text: str) -> bool:
    """Whether a typed address is one mail can be sent to: bounded first,
    then its shape, then as the mail header will hold it."""
    if len(text) > 254 or not _EMAIL.fullmatch(text):
        return False
    try:
        Address(addr_spec=text)
    except Exception:  # the email package raises its defects, and AttributeError on some
        return False
    return True


def _first_page_with(version: Compiled, run: flow.Run, errors: dict[str, str]) -> int:
    """The first page on the path holding a key with an error (else the first)."""
    for candidate in run.pages:
        if service.page_keys(version, candidate) & set(errors):
            return candidate
    return 0


def _ending(
    request: Request,
    form: Form,
    version: Compiled,
    stored: dict[str, Any],
    key: str | None,
    page: Page,
) -> Response:
    """Where a respondent lands: the ending the logic chose, with what they
    answered recalled (escaped on the page, URL-encoded in a redirect), as
    stored (variables under vars.*), in their language."""
    ending = service.ending_of(version, key)
    # The language rides along to the thank-you page of a form that has several.
    in_lang = f"lang={quote(page.lang)}" if len(version.languages) > 1 else ""
    if ending is None:
        return RedirectResponse(f"/f/{form.id}/thanks{'?' if in_lang else ''}{in_lang}", 303)
    values = service.recall_values(version, stored, {})
    if ending.redirect is not None:
        return RedirectResponse(service.recall(ending.redirect, values, encode=True), 303)
    text = f"{ending.title or ''}{ending.text or ''}"
    token = ending_pass.make(services(request).secret_box, form.id, ending.key, utcnow())
    if "{{" not in text and token is not None:
        # Nothing of theirs: a page to reload safely, with the pass that shows it to them.
        ending_url = f"/f/{form.id}/thanks?ending={quote(ending.key)}&token={quote(token)}"
        return RedirectResponse(f"{ending_url}&{in_lang}" if in_lang else ending_url, 303)
    # Their answers recalled (or no key to sign a pass with): shown in this answer.
    return _page(
        request,
        service.recall(ending.title or page.messages["thanks"], values),
        service.recall(ending.text or "", values),
        200,
    )


@router.post("/f/{form_id}/files")
async def upload(request: Request, form_id: FormId) -> Response:
    """A file picked on the page, sent as it is (the page's script posts it
    the moment it is chosen); its id goes into the answers. Counted against
    the address's limit, then the allowance of uploads, then, by its
    declared length, the address's and the form's bytes and the form's room
    for uploads no answers name yet: all before a byte is read. Errors are
    problem documents for the script to show."""
    if (limited := await _limited(request)) is not None:
        return limited
    async with services(request).read_sessionmaker() as session:
        form = await _public(request, session, form_id)
    if form is None:
        raise FormNotFound(form_id)
    if not once.unlocked(request, form):
        raise Forbidden("Enter the form's password first.")
    await guard.refused_upload(request, form)
    address = client_ip(request)
    wait = await services(request).upload_throttle.attempt(form.id, address)
    if wait:
        raise RateLimited(
            "Too many uploads from this address; try again later.",
            headers={"Retry-After": str(wait)},
        )

    async def allowance(size: int) -> None:
        throttle = services(request).upload_bytes
        if size > (largest := throttle.largest()):
            raise PayloadTooLarge(
                f"The file is larger than the {largest} bytes an address may upload.",
                limit=largest,
            )
        wait, which = await throttle.take(form.id, address, size)
        if wait:
            sent = "from this address" if which == "address" else "to this form in the last hour"
            raise RateLimited(
                f"Too many bytes uploaded {sent}; try again later.",
                headers={"Retry-After": str(wait)},
            )

    file = await receive(
        request,
        form,
        request.query_params.get("question"),
        request.query_params.get("name"),
        allowance,
    )
    shown = {k: v for k, v in file_service.view(file).items() if k in _UPLOAD_SHOWN}
    return Response(orjson.dumps(shown), status_code=201, media_type="application/json")


# What the page's script is told of its upload: nothing of the form's owner's.
_UPLOAD_SHOWN = ("id", "name", "size", "contentType")

# A start beacon's body at most: its stamp, and room for nothing else.
_BEACON_MAX = 256


@router.post("/f/{form_id}/start")
async def started(request: Request, form_id: FormId) -> Response:
    """The page's script says a respondent began answering (their first
    input), once, by a beacon carrying their page's stamp: a start in the
    form's funnel, in the hour the stamp names, counted once per stamp
    however often it comes (funnel/buffer.py). Limited per IP like the page;
    no CSRF token, as it changes nothing but a count. A beacon without a
    stamp this service made for this form counts nothing; its answer is 204
    all the same (a script does not read it)."""
    if (limited := await _limited(request)) is not None:
        return limited
    length = request.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > _BEACON_MAX:
        return Response(status_code=413 if length and length.isdigit() else 411)
    body = await request.body()
    if len(body) > _BEACON_MAX:
        return Response(status_code=413)
    try:
        fields = parse_qs(body.decode("ascii", "replace"), max_num_fields=4)
    except ValueError:  # more fields than a beacon sends
        return Response(status_code=400)
    async with services(request).read_sessionmaker() as session:
        form = await _public(request, session, form_id)
    if form is None or limits.state(form, utcnow()) != limits.State.open:
        return Response(status_code=404)
    given = fields.get("_stamp", [""])[0]
    served = stamp.read(services(request).secret_box, form.id, given, utcnow())
    if served is not None:
        services(request).funnel.start(
            form.organization_id, form.id, form.version, served, stamp.claim(given)
        )
    return Response(status_code=204)


_EMAIL_TAKEN = "A response from this email address was taken already."
# A password posted longer than this is wrong without hashing it.
_PASSWORD_MAX = 128


@router.post("/f/{form_id}/unlock")
async def unlock(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    """The answer to a form's password page: a right one sets the form's
    cookie and goes back to the link (or the resume link) it was asked on;
    a wrong one asks again. Every guess counts against the address's and
    the form's allowance (a 429 with Retry-After past it), before the
    password is checked, so concurrent guesses get no more."""
    received = await _received(request, session, form_id)
    if isinstance(received, Response):
        return received
    posted, form = received
    query = once.next_query(posted.get("_next"))
    resume = _token_of(posted)
    back = f"/f/{form.id}/resume/{resume}" if resume else f"/f/{form.id}"
    back += f"?{query}" if query else ""
    if form.password_hash is None:
        return RedirectResponse(back, 303)
    throttle = services(request).password_throttle
    wait = await throttle.attempt(form.id, client_ip(request))
    if wait:
        refused = _page(request, form.title, "Too many tries. Wait a minute and try again.", 429)
        refused.headers["Retry-After"] = str(wait)
        return refused
    given = posted.get("password")
    right = (
        isinstance(given, str)
        and 0 < len(given) <= _PASSWORD_MAX
        and await user_service.verify_passphrase(given, form.password_hash)
    )
    if not right:
        wrong = "That password is not right. Try again."
        return _locked(request, form, query, error=wrong, status=401, resume=resume)
    response = RedirectResponse(back, 303)
    once.set_unlocked(request, response, form)
    return _secret_page(response)


@router.get("/f/{form_id}/thanks")
async def thanks(request: Request, session: ReadSessionDep, form_id: FormId) -> Response:
    """The thank-you page: the ending a respondent reached, to them only
    (the pass their post was sent here with: hosted/ending_pass.py), and
    to anyone else the form's general thanks."""
    if (limited := await _limited(request)) is not None:
        return limited
    form = await _public(request, session, form_id)
    if form is None:
        return _unavailable(request)
    key = request.query_params.get("ending")
    version = await form_service.version_of(
        services(request).read_sessionmaker, services(request).fair_share, form
    )
    shown, page = _shown(request, form, version, _language(request, version))
    ending = service.ending_of(shown, key) if key else None
    thanks = page.messages["thanks"]
    box = services(request).secret_box
    token = request.query_params.get("token")
    if (
        ending is not None
        and ending.redirect is None
        and ending_pass.shows(box, form.id, ending.key, token, utcnow())
    ):
        # A link carries no answers: recall shows its fallbacks, never {{...}}.
        title = service.recall(ending.title or thanks, {})
        return _secret_page(_page(request, title, service.recall(ending.text or "", {}), 200))
    return _page(request, thanks, page.messages["received"].replace("{title}", page.title), 200)


# The policy of every page under /f/: only our own scripts run (the page works
# without them, file questions and a form's proof of work aside), everything
# comes from here, and the script talks to nothing else (its uploads, the
# challenge), its workers from here too (the proof of work's).
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; worker-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors "
)


class HostedPageHeaders:
    """Security headers on every response under /f/, errors and static files
    included; frame-ancestors from the form the route found (its own list
    or its organization's, as hosted.service.public_form chose them:
    request.state.frame_ancestors), and always 'self': the settings area's
    embed page shows the form in a frame (every other page of ours forbids
    being framed, so no other site's page can be above it)."""

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
                headers["Content-Security-Policy"] = _CSP + " ".join(["'self'", *origins])
                headers["X-Content-Type-Options"] = "nosniff"
                if "referrer-policy" not in headers:  # the resume page sends none
                    headers["Referrer-Policy"] = "same-origin"
                if not origins:  # for browsers without CSP 3
                    headers["X-Frame-Options"] = "SAMEORIGIN"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def routes() -> list[BaseRoute]:
    """The routes and their stylesheet. HostedPageHeaders is put on by the app,
    outside every layer that may answer on its own (a 413 before any route)."""
    static = StaticFiles(directory=Path(__file__).parent / "static")
    return [*router.routes, *guard.router.routes, Mount("/f/static", static, name="form-static")]
