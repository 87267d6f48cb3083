"""The Members page: owners and admins invite people by email, change roles,
remove members, and renew or withdraw pending invitations.

With a mail server configured (FORMSAPI_SMTP_URL) an invitation is mailed to
the address and never shown; without one, its link is shown once to whoever
invited, to pass on.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.scopes import ROLE_SCOPES, Scope
from formsapi.kit.mail import Mailer, MailNotSent
from formsapi.member import service as member_service
from formsapi.member.service import IssuedInvitation, MemberNotFound
from formsapi.models import Role
from formsapi.services import services
from formsapi.web.context import (
    DbDep,
    FormText,
    PathId,
    ReadDep,
    back_with,
    log,
    public_link,
    render,
    see_other,
    shown_link,
)
from formsapi.web.pages import Managed, PageRoute, Section
from formsapi.web_session import service as web_session_service

PAGE = "/settings/members"
SECTION = Section("members", "Members", PAGE)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)


@router.get("")
async def members(request: Request, reader: ReadDep, managed: OrganizationDep) -> Response:
    organization_id, viewer = managed.organization.id, managed.viewer
    rows = await member_service.list_members(reader, organization_id)
    pending = await member_service.pending_invitations(reader, organization_id)
    return render(
        request,
        "members/members.html",
        viewer,
        section=SECTION.name,
        members=rows,
        pending=[(invitation, member_service.expired(invitation)) for invitation in pending],
        roles=member_service.may_grant(managed.role),
        role_scopes=[
            (
                role,
                [scope in ROLE_SCOPES[role] for scope in Scope],
                member_service.can_manage_members(role),
            )
            for role in Role
        ],
        scopes=list(Scope),
        invited=viewer.flash.get("invited"),
        mail=services(request).mailer.enabled,
    )


async def _deliver(
    request: Request, session: AsyncSession, managed: Managed, issued: IssuedInvitation
) -> Response:
    """Mail the invitation (once it is committed) or show its link once."""
    invitation, organization, viewer = issued.invitation, managed.organization, managed.viewer
    path = f"/invitations/{issued.token}"
    mailer: Mailer = services(request).mailer
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
        # Not a refusal: the invitation stands (committed above), only its mail failed.
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
    managed: OrganizationDep,
    email: FormText = "",
    role: FormText = "",
) -> Response:
    issued = await member_service.invite(
        session, managed.organization.id, managed.viewer.user.id, managed.role, email, role
    )
    return await _deliver(request, session, managed, issued)


@router.post("/invitations/{invitation_id}/renew")
async def renew(
    request: Request, session: DbDep, managed: OrganizationDep, invitation_id: PathId
) -> Response:
    issued = await member_service.renew(
        session, managed.organization.id, managed.viewer.user.id, managed.role, invitation_id
    )
    return await _deliver(request, session, managed, issued)


@router.post("/invitations/{invitation_id}/cancel")
async def cancel(session: DbDep, managed: OrganizationDep, invitation_id: PathId) -> Response:
    invitation = await member_service.cancel(
        session, managed.organization.id, managed.role, invitation_id
    )
    return await back_with(
        session, managed.viewer, PAGE, notice=f"The invitation of {invitation.email} is withdrawn."
    )


@router.post("/{user_id}/role")
async def change_role(
    session: DbDep, managed: OrganizationDep, user_id: PathId, role: FormText = ""
) -> Response:
    await member_service.change_role(session, managed.organization.id, managed.role, user_id, role)
    return await back_with(
        session,
        managed.viewer,
        PAGE,
        notice=f"Role changed to {role}; their API keys follow at once.",
    )


@router.get("/{user_id}/remove")
async def confirm_remove(
    request: Request, reader: ReadDep, managed: OrganizationDep, user_id: PathId
) -> Response:
    found = [
        (user, membership)
        for user, membership in await member_service.list_members(reader, managed.organization.id)
        if user.id == user_id
    ]
    if not found:
        raise MemberNotFound()
    [(user, membership)] = found
    return render(
        request,
        "members/remove.html",
        managed.viewer,
        section=SECTION.name,
        user=user,
        membership=membership,
        leaving=user.id == managed.viewer.user.id,
    )


@router.post("/{user_id}/remove")
async def remove(session: DbDep, managed: OrganizationDep, user_id: PathId) -> Response:
    viewer = managed.viewer
    user = await member_service.remove(
        session, managed.organization.id, viewer.user.id, managed.role, user_id
    )
    if user.id == viewer.user.id:
        await web_session_service.set_organization(session, viewer.signed_in, None)
        return see_other("/forms")
    return await back_with(
        session, viewer, PAGE, notice=f"{user.email} was removed; their API keys are revoked."
    )
