"""The Members page: owners and admins add people by email, change roles, remove them."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from formsapi.api_key.scopes import ROLE_SCOPES, Scope
from formsapi.errors import FormsAPIError
from formsapi.member import service as member_service
from formsapi.models import Role
from formsapi.web.context import DbDep, FormText, Viewer, ViewerDep, back_with, render, see_other

router = APIRouter(prefix="/settings/members")

PAGE = "/settings/members"


def _invitation_url(request: Request, token: str) -> str:
    return str(request.base_url).rstrip("/") + f"/invitations/{token}"


def _roles_for(viewer: Viewer) -> list[str]:
    """The roles this person may hand out: only an owner makes owners."""
    return [role for role in Role if role != Role.owner or viewer.role == Role.owner]


@router.get("")
async def members(request: Request, session: DbDep, viewer: ViewerDep) -> Response:
    if viewer.organization is None:
        return render(request, "no_organization.html", viewer, section="members")
    rows = await member_service.list_members(session, viewer.organization.id)
    pending = await member_service.pending_invitations(session, viewer.organization.id)
    return render(
        request,
        "members.html",
        viewer,
        section="members",
        members=rows,
        pending=pending,
        roles=_roles_for(viewer),
        all_roles=list(Role),
        role_scopes=[(role, [scope in ROLE_SCOPES[role] for scope in Scope]) for role in Role],
        scopes=list(Scope),
        invited=viewer.flash.get("invited"),
    )


@router.post("")
async def add(
    request: Request, session: DbDep, viewer: ViewerDep, email: FormText = "", role: FormText = ""
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        added = await member_service.add(session, viewer.organization.id, viewer.role, email, role)
    except FormsAPIError as error:
        return back_with(viewer, PAGE, error=error.detail)
    if added.invitation_token is None:
        return back_with(
            viewer,
            PAGE,
            notice=f"{added.user.email} is now {role}. They sign in with their own password.",
        )
    return back_with(
        viewer,
        PAGE,
        invited={
            "email": added.user.email,
            "url": _invitation_url(request, added.invitation_token),
        },
    )


@router.post("/{user_id}/invitation")
async def new_invitation(
    request: Request, session: DbDep, viewer: ViewerDep, user_id: str
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        user, token = await member_service.reinvite(
            session, viewer.organization.id, viewer.role, user_id
        )
    except FormsAPIError as error:
        return back_with(viewer, PAGE, error=error.detail)
    return back_with(
        viewer, PAGE, invited={"email": user.email, "url": _invitation_url(request, token)}
    )


@router.post("/{user_id}/role")
async def change_role(
    session: DbDep, viewer: ViewerDep, user_id: str, role: FormText = ""
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        await member_service.change_role(
            session, viewer.organization.id, viewer.role, user_id, role
        )
    except FormsAPIError as error:
        return back_with(viewer, PAGE, error=error.detail)
    return back_with(viewer, PAGE, notice=f"Role changed to {role}; their API keys follow at once.")


@router.get("/{user_id}/remove")
async def confirm_remove(
    request: Request, session: DbDep, viewer: ViewerDep, user_id: str
) -> Response:
    if viewer.organization is None:
        return see_other(PAGE)
    member = next(
        (
            (user, membership)
            for user, membership in await member_service.list_members(
                session, viewer.organization.id
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
async def remove(session: DbDep, viewer: ViewerDep, user_id: str) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        user = await member_service.remove(
            session, viewer.organization.id, viewer.user.id, viewer.role, user_id
        )
    except FormsAPIError as error:
        return back_with(viewer, PAGE, error=error.detail)
    if user.id == viewer.user.id:
        viewer.signed_in.web_session.organization_id = None
        return see_other("/forms")
    return back_with(
        viewer, PAGE, notice=f"{user.email} was removed; their API keys no longer work."
    )
