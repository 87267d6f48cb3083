"""The Members page: owners and admins invite people by email, change roles,
remove members, and renew or withdraw pending invitations.

With a mail server configured (FORMSAPI_SMTP_URL) an invitation is mailed to
the address and never shown; without one, its link is shown once to whoever
invited, to pass on.
"""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.scopes import ROLE_SCOPES, Scope
from formsapi.errors import FormsAPIError
from formsapi.kit.mail import Mailer, MailNotSent
from formsapi.member import service as member_service
from formsapi.member.service import IssuedInvitation
from formsapi.models import Role
from formsapi.web.context import (
    DbDep,
    FormText,
    PathId,
    ReadDep,
    Viewer,
    ViewerDep,
    back_with,
    log,
    public_link,
    render,
    see_other,
    shown_link,
)
from formsapi.web_session import service as web_session_service

router = APIRouter(prefix="/settings/members")

PAGE = "/settings/members"


@router.get("")
async def members(request: Request, reader: ReadDep, viewer: ViewerDep) -> Response:
    if viewer.organization is None:
        return render(request, "no_organization.html", viewer, section="members")
    rows = await member_service.list_members(reader, viewer.organization.id)
    pending = await member_service.pending_invitations(reader, viewer.organization.id)
    return render(
        request,
        "members.html",
        viewer,
        section="members",
        members=rows,
        pending=[(invitation, member_service.expired(invitation)) for invitation in pending],
        roles=member_service.may_grant(viewer.role or ""),
        role_scopes=[(role, [scope in ROLE_SCOPES[role] for scope in Scope]) for role in Role],
        scopes=list(Scope),
        invited=viewer.flash.get("invited"),
        mail=request.app.state.mailer.enabled,
    )


async def _deliver(
    request: Request, session: AsyncSession, viewer: Viewer, issued: IssuedInvitation
) -> Response:
    """Mail the invitation (once it is committed) or show its link once."""
    invitation, organization = issued.invitation, viewer.organization
    assert organization is not None
    path = f"/invitations/{issued.token}"
    mailer: Mailer = request.app.state.mailer
    if not mailer.enabled:
        return await back_with(
            session,
            viewer,
            PAGE,
            invited={
                "email": invitation.email,
                "role": invitation.role,
                "url": shown_link(request, path),
            },
        )
    await session.commit()  # the link must work by the time the mail arrives
    try:
        await mailer.send(
            invitation.email,
            f"Join {organization.name} on formsapi",
            f"{viewer.user.email} invites you to {organization.name} on formsapi, as "
            f"{invitation.role}.\n\nAccept here within 7 days; the link works once:\n\n"
            f"{public_link(request, path)}\n\nIf you have no account yet, the link lets you "
            "create one for this address. If you did not expect this, ignore this message.",
        )
    except MailNotSent as error:
        log.warning("invitation mail not sent: %s", error)
        return await back_with(
            session,
            viewer,
            PAGE,
            error=f"The invitation of {invitation.email} is saved, but the mail could not be "
            f"sent ({error}). Try “Send again” in a moment.",
        )
    return await back_with(
        session,
        viewer,
        PAGE,
        notice=f"Invitation sent to {invitation.email}. It works once, for 7 days.",
    )


@router.post("")
async def invite(
    request: Request,
    session: DbDep,
    viewer: ViewerDep,
    email: FormText = "",
    role: FormText = "",
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        issued = await member_service.invite(
            session, viewer.organization.id, viewer.user.id, viewer.role, email, role
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    return await _deliver(request, session, viewer, issued)


@router.post("/invitations/{invitation_id}/renew")
async def renew(
    request: Request, session: DbDep, viewer: ViewerDep, invitation_id: PathId
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        issued = await member_service.renew(
            session, viewer.organization.id, viewer.user.id, viewer.role, invitation_id
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    return await _deliver(request, session, viewer, issued)


@router.post("/invitations/{invitation_id}/cancel")
async def cancel(session: DbDep, viewer: ViewerDep, invitation_id: PathId) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        invitation = await member_service.cancel(
            session, viewer.organization.id, viewer.role, invitation_id
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    return await back_with(
        session, viewer, PAGE, notice=f"The invitation of {invitation.email} is withdrawn."
    )


@router.post("/{user_id}/role")
async def change_role(
    session: DbDep, viewer: ViewerDep, user_id: PathId, role: FormText = ""
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        await member_service.change_role(
            session, viewer.organization.id, viewer.role, user_id, role
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    return await back_with(
        session, viewer, PAGE, notice=f"Role changed to {role}; their API keys follow at once."
    )


@router.get("/{user_id}/remove")
async def confirm_remove(
    request: Request, reader: ReadDep, viewer: ViewerDep, user_id: PathId
) -> Response:
    if viewer.organization is None:
        return see_other(PAGE)
    member = next(
        (
            (user, membership)
            for user, membership in await member_service.list_members(
                reader, viewer.organization.id
            )
            if user.id == user_id
        ),
        None,
    )
    if member is None:
        return render(
            request,
            "message.html",
            viewer,
            404,
            heading="Member not found",
            message="There is no such member in this organization.",
            section="members",
        )
    user, membership = member
    return render(
        request,
        "member_remove.html",
        viewer,
        section="members",
        user=user,
        membership=membership,
        leaving=user.id == viewer.user.id,
    )


@router.post("/{user_id}/remove")
async def remove(session: DbDep, viewer: ViewerDep, user_id: PathId) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        user = await member_service.remove(
            session, viewer.organization.id, viewer.user.id, viewer.role, user_id
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    if user.id == viewer.user.id:
        await web_session_service.set_organization(session, viewer.signed_in, None)
        return see_other("/forms")
    return await back_with(
        session, viewer, PAGE, notice=f"{user.email} was removed; their API keys are revoked."
    )
