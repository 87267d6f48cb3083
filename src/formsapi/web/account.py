"""Signing in and out, the password, switching organization, accepting an invitation."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from formsapi.dependencies import client_ip
from formsapi.errors import FormsAPIError
from formsapi.member import service as member_service
from formsapi.ratelimit.service import SignInThrottle
from formsapi.user import service as user_service
from formsapi.web.context import (
    CSRF_COOKIE,
    DbDep,
    FormText,
    ViewerDep,
    anonymous_csrf,
    anonymous_csrf_valid,
    back_with,
    render,
    see_other,
    set_anonymous_csrf,
    set_session_cookie,
)
from formsapi.web_session import service as web_session_service

router = APIRouter()

INCORRECT = "Email or password is incorrect."


def _safe_next(value: str | None) -> str:
    # Only paths of this site: an open redirect would lend our name to phishing.
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/forms"


def _wait_message(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many failed sign-in attempts. Wait {minutes} {unit} and try again."


def _sign_in_page(
    request: Request, status: int = 200, error: str | None = None, notice: str | None = None
) -> Response:
    token = anonymous_csrf(request)
    response = render(
        request,
        "sign_in.html",
        None,
        status,
        csrf_token=token,
        error=error,
        notice=notice,
        next=_safe_next(request.query_params.get("next")),
        email=request.query_params.get("email", ""),
    )
    set_anonymous_csrf(request, response, token)
    return response


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
    session: DbDep,
    email: FormText = "",
    password: FormText = "",
    next: FormText = "/forms",
) -> Response:
    if not await anonymous_csrf_valid(request):
        return _sign_in_page(request, 403, "This page had expired. Please sign in again.")
    throttle: SignInThrottle = request.app.state.sign_in_throttle
    address = client_ip(request)
    wait = await throttle.attempt(email, address)
    if wait:
        response = _sign_in_page(request, 429, _wait_message(wait))
        response.headers["Retry-After"] = str(wait)
        return response
    user = await user_service.authenticate(session, email, password)
    if user is None:
        return _sign_in_page(request, 400, INCORRECT)
    await throttle.succeeded(email)
    organizations = await member_service.organizations_of(session, user.id)
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


@router.get("/settings/account")
async def account(request: Request, viewer: ViewerDep) -> Response:
    return render(request, "account.html", viewer, section="account")


@router.post("/settings/account/password")
async def change_password(
    request: Request,
    session: DbDep,
    viewer: ViewerDep,
    current_password: FormText = "",
    new_password: FormText = "",
    confirm_password: FormText = "",
) -> Response:
    throttle: SignInThrottle = request.app.state.sign_in_throttle
    email, address = viewer.user.email, client_ip(request)
    back = "/settings/account"
    if wait := await throttle.attempt(email, address):
        return back_with(viewer, back, error=_wait_message(wait))
    if await user_service.authenticate(session, email, current_password) is None:
        return back_with(viewer, back, error="The current password is incorrect.")
    await throttle.succeeded(email)
    if new_password != confirm_password:
        return back_with(viewer, back, error="The new passwords do not match.")
    try:
        user_service.set_password(viewer.user, new_password)
    except FormsAPIError as error:
        return back_with(viewer, back, error=error.detail)
    await web_session_service.end_others(session, viewer.signed_in)
    return back_with(
        viewer, back, notice="Password changed. Every other session has been signed out."
    )


@router.post("/settings/organization")
async def switch_organization(
    viewer: ViewerDep, organization_id: FormText = "", next: FormText = "/forms"
) -> Response:
    if not any(organization.id == organization_id for organization, _ in viewer.organizations):
        return back_with(viewer, "/forms", error="You are not a member of that organization.")
    viewer.signed_in.web_session.organization_id = organization_id
    # A form page belongs to the organization just left: land on the list instead.
    target = _safe_next(next)
    return see_other("/forms" if target.startswith("/forms/") else target)


def _invitation_page(
    request: Request, token: str, status: int = 200, error: str | None = None, **context: object
) -> Response:
    csrf = anonymous_csrf(request)
    response = render(
        request,
        "invitation.html",
        None,
        status,
        csrf_token=csrf,
        token=token,
        error=error,
        **context,
    )
    set_anonymous_csrf(request, response, csrf)
    return response


@router.get("/invitations/{token}")
async def invitation(request: Request, session: DbDep, token: str) -> Response:
    try:
        user, organization = await member_service.invitation(session, token)
    except FormsAPIError as error:
        return render(
            request, "message.html", None, 404, heading="Invitation", message=error.detail
        )
    return _invitation_page(request, token, email=user.email, organization=organization)


@router.post("/invitations/{token}")
async def accept_invitation(
    request: Request,
    session: DbDep,
    token: str,
    new_password: FormText = "",
    confirm_password: FormText = "",
) -> Response:
    try:
        user, organization = await member_service.invitation(session, token)
    except FormsAPIError as error:
        return render(
            request, "message.html", None, 404, heading="Invitation", message=error.detail
        )
    context = {"email": user.email, "organization": organization}
    if not await anonymous_csrf_valid(request):
        return _invitation_page(request, token, 403, "This page had expired. Try again.", **context)
    if new_password != confirm_password:
        return _invitation_page(request, token, 400, "The passwords do not match.", **context)
    try:
        await member_service.accept(session, token, new_password)
    except FormsAPIError as error:
        return _invitation_page(request, token, 400, error.detail, **context)
    signed_in = await web_session_service.start(session, user, organization.id)
    web_session_service.put_flash(
        signed_in, {"notice": f"Welcome to {organization.name}. Your password is set."}
    )
    response = see_other("/forms")
    set_session_cookie(request, response, signed_in.token)
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response
