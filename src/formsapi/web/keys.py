"""The API Keys page: generate (the secret shown once), list, revoke."""

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from formsapi.api_key import service as api_key_service
from formsapi.api_key.scopes import READ_SCOPES, ROLE_SCOPES, Scope
from formsapi.errors import FormsAPIError
from formsapi.web.context import (
    DbDep,
    FormText,
    PathId,
    ReadDep,
    Viewer,
    ViewerDep,
    back_with,
    render,
    see_other,
)

router = APIRouter(prefix="/settings/keys")

PAGE = "/settings/keys"
SCOPE_HELP = {
    Scope.forms_read: "List forms, read their blocks and schemas",
    Scope.submissions_read: "Read submissions",
    Scope.forms_write: "Create, change, publish and delete forms",
    Scope.submissions_write: "Send, correct and delete submissions",
    Scope.events_read: "Read the events list (what changed, for catching up)",
    Scope.webhooks_manage: "Add, change and remove webhook endpoints",
}


def _no_organization(request: Request, viewer: Viewer) -> Response:
    return render(request, "no_organization.html", viewer, section="keys")


@router.get("")
async def keys(request: Request, session: ReadDep, viewer: ViewerDep) -> Response:
    if viewer.organization is None or viewer.role is None:
        return _no_organization(request, viewer)
    listings = await api_key_service.list_with_status(session, viewer.organization.id)
    allowed = ROLE_SCOPES[viewer.role]
    return render(
        request,
        "keys.html",
        viewer,
        section="keys",
        listings=listings,
        scopes=[(scope, SCOPE_HELP[scope], scope in allowed) for scope in Scope],
        default_scopes=READ_SCOPES,
        created=viewer.flash.get("created"),
        may_revoke=lambda key: api_key_service.may_revoke(key, viewer.user.id, viewer.role or ""),
    )


@router.post("")
async def generate(
    session: DbDep,
    viewer: ViewerDep,
    name: FormText = "",
    scopes: Annotated[list[str] | None, Form()] = None,
) -> Response:
    if viewer.organization is None:
        return see_other(PAGE)
    if not scopes:
        return await back_with(session, viewer, PAGE, error="Choose at least one scope.")
    try:
        created = await api_key_service.create(
            session, viewer.organization, viewer.user, name, scopes
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    # Carried to the next page in the session's encrypted one-time message and
    # gone once shown: a reload or the back button finds nothing to show.
    return await back_with(
        session,
        viewer,
        PAGE,
        created={
            "name": created.key.name,
            "secret": created.secret,
            "scopes": created.key.scopes,
        },
    )


@router.get("/{key_id}/revoke")
async def confirm_revoke(
    request: Request, session: ReadDep, viewer: ViewerDep, key_id: PathId
) -> Response:
    if viewer.organization is None or viewer.role is None:
        return _no_organization(request, viewer)
    listing = next(
        (
            listing
            for listing in await api_key_service.list_with_status(session, viewer.organization.id)
            if listing.key.id == key_id
        ),
        None,
    )
    if listing is None or not api_key_service.may_revoke(listing.key, viewer.user.id, viewer.role):
        return render(
            request,
            "message.html",
            viewer,
            404,
            heading="Key not found",
            message="There is no such API key in this organization.",
            section="keys",
        )
    return render(request, "key_revoke.html", viewer, section="keys", listing=listing)


@router.post("/{key_id}/revoke")
async def revoke(session: DbDep, viewer: ViewerDep, key_id: PathId) -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        key = await api_key_service.revoke_in(
            session, viewer.organization.id, key_id, viewer.user.id, viewer.role
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    return await back_with(
        session,
        viewer,
        PAGE,
        notice=f"Key “{key.name}” ({key.prefix}…) is revoked: it fails from now on.",
    )
