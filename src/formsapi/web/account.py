"""Signing in and out, the password (changed, or reset through a mailed
link), and switching organization."""

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from formsapi.dependencies import client_ip
from formsapi.errors import BadRequest, FormsAPIError, NotFound, RateLimited
from formsapi.kit.mail import Mailer, MailNotSent
from formsapi.member import service as member_service
from formsapi.ratelimit.service import SignInThrottle
from formsapi.services import services
from formsapi.user import service as user_service
from formsapi.web.context import (
    CSRF_COOKIE,
    DbDep,
    FormText,
    ReadDep,
    Viewer,
    ViewerDep,
    anonymous_csrf,
    anonymous_csrf_valid,
    back_with,
    log,
    public_link,
    render,
    see_other,
    set_anonymous_csrf,
    set_session_cookie,
)
from formsapi.web.forms import SECTION as FORMS
from formsapi.web.pages import PageRoute, Section
from formsapi.web_session import service as web_session_service

SECTION = Section("account", "Account", "/settings/account")
AccountDep = Annotated[Viewer, Depends(SECTION.signed_in)]
# The organization chooser of the top bar, on every page: refused, it goes to the forms.
ChooserDep = Annotated[Viewer, Depends(FORMS.signed_in)]

router = APIRouter(route_class=PageRoute, include_in_schema=False)

INCORRECT = "Email or password is incorrect."
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _safe_next(value: str | None) -> str:
    # Only paths of this site: an open redirect would lend our name to phishing.
    # No controls either: a browser drops TAB, CR and LF, so "/\t/evil.example"
    # is "//evil.example" to it.
    if (
        value
        and value.startswith("/")
        and not value.startswith("//")
        and "\\" not in value
        and not _CONTROL.search(value)
    ):
        return value
    return "/forms"


def _wait_message(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many failed sign-in attempts. Wait {minutes} {unit} and try again."


async def throttled(request: Request, email: str) -> str | None:
    """Take a sign-in throttle slot for an attempt on `email` from this address:
    None when it may go ahead, else what to tell the person."""
    throttle: SignInThrottle = services(request).sign_in_throttle
    wait = await throttle.attempt(email, client_ip(request))
    return _wait_message(wait) if wait else None


def anonymous_page(
    request: Request, template: str, status: int = 200, **context: object
) -> Response:
    """A page shown before sign-in whose form carries the double-submit token."""
    token = anonymous_csrf(request)
    response = render(request, template, None, status, csrf_token=token, **context)
    set_anonymous_csrf(request, response, token)
    return response


def _sign_in_page(
    request: Request, status: int = 200, error: str | None = None, notice: str | None = None
) -> Response:
    return anonymous_page(
        request,
        "account/sign_in.html",
        status,
        error=error,
        notice=notice,
        next=_safe_next(request.query_params.get("next")),
        email=request.query_params.get("email", ""),
    )


@router.get("/")
async def home() -> Response:
    return see_other("/forms")


@router.get("/sign-in")
async def sign_in_form(request: Request) -> Response:
    notice = "You are signed out." if request.query_params.get("signed_out") else None
    return _sign_in_page(request, notice=notice)


@router.post("/sign-in")
async def sign_in(
    request: Request,
    reader: ReadDep,
    session: DbDep,
    email: FormText = "",
    password: FormText = "",
    next: FormText = "/forms",
) -> Response:
    if not await anonymous_csrf_valid(request):
        return _sign_in_page(request, 403, "This page had expired. Please sign in again.")
    throttle: SignInThrottle = services(request).sign_in_throttle
    if wait := await throttle.attempt(email, client_ip(request)):
        response = _sign_in_page(request, 429, _wait_message(wait))
        response.headers["Retry-After"] = str(wait)
        return response
    user = await user_service.find(reader, email)
    organizations = await member_service.organizations_of(reader, user.id) if user else []
    await reader.close()  # no connection held through the password check
    if not await user_service.verify_password(user, password):
        return _sign_in_page(request, 400, INCORRECT)
    assert user is not None
    await throttle.succeeded(email)
    signed_in = await web_session_service.start(
        session, user, organizations[0][0].id if organizations else None
    )
    response = see_other(_safe_next(next))
    set_session_cookie(request, response, signed_in.token)
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: DbDep, viewer: ViewerDep) -> Response:
    await web_session_service.end(session, viewer.signed_in.token)
    response = see_other("/sign-in?signed_out=1")
    set_session_cookie(request, response, None)
    return response


@router.get(SECTION.page)
async def account(request: Request, viewer: AccountDep) -> Response:
    return render(request, "account/account.html", viewer, section=SECTION.name)


@router.post(f"{SECTION.page}/password")
async def change_password(
    request: Request,
    session: DbDep,
    viewer: AccountDep,
    current_password: FormText = "",
    new_password: FormText = "",
    confirm_password: FormText = "",
) -> Response:
    throttle: SignInThrottle = services(request).sign_in_throttle
    email = viewer.user.email
    if wait := await throttle.attempt(email, client_ip(request)):
        raise RateLimited(_wait_message(wait))
    if not await user_service.verify_password(viewer.user, current_password):
        raise BadRequest("The current password is incorrect.")
    await throttle.succeeded(email)
    if new_password != confirm_password:
        raise BadRequest("The new passwords do not match.")
    password_hash = await user_service.hash_password(new_password)
    await user_service.set_password_hash(session, viewer.user.id, password_hash)
    await web_session_service.end_others(session, viewer.signed_in)
    return await back_with(
        session,
        viewer,
        SECTION.page,
        notice="Password changed. Every other session has been signed out.",
    )


@router.post("/settings/organization")
async def switch_organization(
    session: DbDep, viewer: ChooserDep, organization_id: FormText = "", next: FormText = "/forms"
) -> Response:
    # One that does not exist and one the person is not in answer alike.
    if not any(organization.id == organization_id for organization, _ in viewer.organizations):
        raise NotFound("You are not a member of that organization.")
    await web_session_service.set_organization(session, viewer.signed_in, organization_id)
    # A form page belongs to the organization just left: land on the list instead.
    target = _safe_next(next)
    return see_other("/forms" if target.startswith("/forms/") else target)


@router.get("/forgot-password")
async def forgot_password_form(request: Request) -> Response:
    mailer: Mailer = services(request).mailer
    return anonymous_page(request, "account/forgot_password.html", mail=mailer.enabled)


@router.post("/forgot-password")
async def forgot_password(request: Request, session: DbDep, email: FormText = "") -> Response:
    """Mail a reset link to the account's address. The answer is the same
    whether or not the address has an account."""
    mailer: Mailer = services(request).mailer
    if not mailer.enabled:
        return anonymous_page(request, "account/forgot_password.html", 404, mail=False)
    if not await anonymous_csrf_valid(request):
        return anonymous_page(
            request, "account/forgot_password.html", 403, mail=True, error="This page had expired."
        )
    throttle: SignInThrottle = services(request).sign_in_throttle
    if wait := await throttle.attempt(email, client_ip(request)):
        return anonymous_page(
            request, "account/forgot_password.html", 429, mail=True, error=_wait_message(wait)
        )
    try:
        started = await user_service.start_reset(session, email)
    except FormsAPIError as error:
        return anonymous_page(
            request, "account/forgot_password.html", 400, mail=True, error=error.detail
        )
    await session.commit()  # the link must exist before anyone can follow it
    response = anonymous_page(request, "account/forgot_password.html", mail=True, sent=email)
    if started is not None:
        # Sent after the response: how long the answer takes tells nothing of
        # whether the address has an account.
        user, token = started
        response.background = BackgroundTask(
            _send_reset, mailer, user.email, public_link(request, f"/reset-password/{token}")
        )
    return response


async def _send_reset(mailer: Mailer, email: str, link: str) -> None:
    try:
        await mailer.send(
            email,
            "Choose a new formsapi password",
            "Someone (we hope you) asked to reset the password of the formsapi account "
            f"{email}.\n\nChoose a new one here within the hour; the link works "
            f"once:\n\n{link}\n\n"
            "If you did not ask for this, ignore this message: your password stays as it is.",
        )
    except MailNotSent as error:
        log.warning("password reset mail not sent: %s", error)


async def _reset_page(
    request: Request, reader: ReadDep, token: str, status: int = 200, error: str | None = None
) -> Response:
    """The form, again with what was wrong; a link that opens nothing is answered as missing."""
    user = await user_service.open_reset(reader, token)
    return anonymous_page(
        request, "account/reset_password.html", status, token=token, email=user.email, error=error
    )


@router.get("/reset-password/{token}")
async def reset_password_form(request: Request, reader: ReadDep, token: str) -> Response:
    return await _reset_page(request, reader, token)


@router.post("/reset-password/{token}")
async def reset_password(
    request: Request,
    reader: ReadDep,
    session: DbDep,
    token: str,
    new_password: FormText = "",
    confirm_password: FormText = "",
) -> Response:
    if not await anonymous_csrf_valid(request):
        return await _reset_page(request, reader, token, 403, "This page had expired. Try again.")
    if new_password != confirm_password:
        return await _reset_page(request, reader, token, 400, "The passwords do not match.")
    # A link that opens nothing costs no hash; one that does is throttled as sign-in is.
    holder = await user_service.open_reset(reader, token)
    await reader.close()
    if wait := await throttled(request, holder.email):
        return await _reset_page(request, reader, token, 429, wait)
    try:
        password_hash = await user_service.hash_password(new_password)
        user = await user_service.finish_reset(session, token, password_hash)
    except FormsAPIError as error:
        await session.rollback()  # let its connection go before the page reads
        # A link that stopped working meanwhile is answered as missing, by _reset_page.
        return await _reset_page(request, reader, token, 400, error.detail)
    # Whoever knew the old password (or held a session) is out.
    await web_session_service.end_all_of(session, user.id)
    organizations = await member_service.organizations_of(session, user.id)
    signed_in = await web_session_service.start(
        session, user, organizations[0][0].id if organizations else None
    )
    await web_session_service.put_flash(
        session, signed_in, {"notice": "Your new password is set. Every other session is out."}
    )
    response = see_other("/forms")
    set_session_cookie(request, response, signed_in.token)
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response
