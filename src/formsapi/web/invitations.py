"""An invitation link, opened by whoever holds it.

Signed in to the invited address's account: accept. Signed in to another:
told to switch. Not signed in: sign in to accept, or, when the address has no
account yet, create it here. The link never sets or changes the password of
an account that has one.
"""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from formsapi.errors import FormsAPIError
from formsapi.member import service as member_service
from formsapi.member.service import InvitationNotValid
from formsapi.user import service as user_service
from formsapi.web.account import anonymous_page, throttled
from formsapi.web.context import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    DbDep,
    FormText,
    ReadDep,
    anonymous_csrf_valid,
    same_origin,
    see_other,
    set_session_cookie,
)
from formsapi.web.pages import PageRoute
from formsapi.web_session import service as web_session_service
from formsapi.web_session.service import SignedIn

router = APIRouter(prefix="/invitations", route_class=PageRoute, include_in_schema=False)


async def _page(
    request: Request,
    reader: ReadDep,
    token: str,
    status: int = 200,
    error: str | None = None,
) -> Response:
    """The invitation's form, again with what was wrong. A link that opens
    nothing (InvitationNotValid) is answered as missing, as everywhere here."""
    found = await member_service.open_invitation(reader, token)
    signed_in = await web_session_service.resume(reader, request.cookies.get(SESSION_COOKIE))
    return anonymous_page(
        request,
        "invitations/invitation.html",
        status,
        token=token,
        invitation=found.invitation,
        organization=found.organization,
        has_account=found.has_account,
        signed_in=signed_in,
        session_csrf=signed_in.web_session.csrf_token if signed_in else None,
        error=error,
    )


@router.get("/{token}")
async def invitation(request: Request, reader: ReadDep, token: str) -> Response:
    return await _page(request, reader, token)


@router.post("/{token}")
async def respond(
    request: Request,
    reader: ReadDep,
    session: DbDep,
    token: str,
    new_password: FormText = "",
    confirm_password: FormText = "",
) -> Response:
    """Accept as the signed-in account, or create the account and join."""
    signed_in = await web_session_service.resume(reader, request.cookies.get(SESSION_COOKIE))
    await reader.close()  # one connection at a time: the transaction below takes its own
    if signed_in is not None:
        return await _accept(request, reader, session, token, signed_in)
    if not await anonymous_csrf_valid(request):
        return await _page(request, reader, token, 403, "This page had expired. Try again.")
    if new_password != confirm_password:
        return await _page(request, reader, token, 400, "The passwords do not match.")
    # A link that opens nothing costs no hash; one that does is throttled as sign-in is.
    invited = (await member_service.open_invitation(reader, token)).invitation.email
    await reader.close()
    if wait := await throttled(request, invited):
        return await _page(request, reader, token, 429, wait)
    try:
        password_hash = await user_service.hash_password(new_password)  # before the transaction
        user, joined = await member_service.join_with_new_account(session, token, password_hash)
    except InvitationNotValid:
        raise
    except FormsAPIError as error:
        await session.rollback()
        # What was typed, or an account that exists already: the form says so.
        return await _page(request, reader, token, 400, error.detail)
    signed_in = await web_session_service.start(session, user, joined.organization.id)
    return await _welcome(request, session, signed_in, joined.organization.name)


async def _accept(
    request: Request, reader: ReadDep, session: DbDep, token: str, signed_in: SignedIn
) -> Response:
    submitted = (await request.form()).get(CSRF_FIELD)
    if not (
        same_origin(request)
        and isinstance(submitted, str)
        and web_session_service.csrf_matches(signed_in, submitted)
    ):
        return await _page(request, reader, token, 403, "This page had expired. Try again.")
    try:
        joined = await member_service.accept(session, token, signed_in.user)
    except InvitationNotValid:
        raise
    except FormsAPIError as error:
        await session.rollback()
        return await _page(request, reader, token, error.status, error.detail)
    await web_session_service.set_organization(session, signed_in, joined.organization.id)
    return await _welcome(request, session, signed_in, joined.organization.name)


async def _welcome(
    request: Request, session: DbDep, signed_in: SignedIn, organization: str
) -> Response:
    await web_session_service.put_flash(
        session, signed_in, {"notice": f"Welcome to {organization}."}
    )
    response = see_other("/forms")
    set_session_cookie(request, response, signed_in.token)
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response
