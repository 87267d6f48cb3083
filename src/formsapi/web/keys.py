"""The API Keys page: generate (the secret shown once), list, revoke."""

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from formsapi.api_key import service as api_key_service
from formsapi.api_key.scopes import READ_SCOPES, ROLE_SCOPES, Scope
from formsapi.errors import BadRequest
from formsapi.web.context import DbDep, FormText, PathId, ReadDep, back_with, render
from formsapi.web.pages import KeyNotFound, Managed, PageRoute, Section

PAGE = "/settings/keys"
SECTION = Section("keys", "API keys", PAGE)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

SCOPE_HELP = {
    Scope.forms_read: "List forms, read their blocks and schemas",
    Scope.submissions_read: "Read submissions",
    Scope.forms_write: "Create, change, publish and delete forms",
    Scope.submissions_write: "Send, correct and delete submissions",
    Scope.events_read: "Read the events list (what changed, for catching up)",
    Scope.webhooks_manage: "Add, change and remove webhook endpoints",
}


@router.get("")
async def keys(request: Request, session: ReadDep, managed: OrganizationDep) -> Response:
    listings = await api_key_service.list_with_status(session, managed.organization.id)
    allowed = ROLE_SCOPES[managed.role]
    return render(
        request,
        "keys/keys.html",
        managed.viewer,
        section=SECTION.name,
        listings=listings,
        scopes=[(scope, SCOPE_HELP[scope], scope in allowed) for scope in Scope],
        default_scopes=READ_SCOPES,
        created=managed.viewer.flash.get("created"),
    )


@router.post("")
async def generate(
    session: DbDep,
    managed: OrganizationDep,
    name: FormText = "",
    scopes: Annotated[list[str] | None, Form()] = None,
) -> Response:
    if not scopes:
        raise BadRequest("Choose at least one scope.")
    created = await api_key_service.create(
        session, managed.organization, managed.viewer.user, name, scopes
    )
    # Carried to the next page in the session's encrypted one-time message and
    # gone once shown: a reload or the back button finds nothing to show.
    return await back_with(
        session,
        managed.viewer,
        PAGE,
        created={
            "name": created.key.name,
            "secret": created.secret,
            "scopes": created.key.scopes,
        },
    )


@router.get("/{key_id}/revoke")
async def confirm_revoke(
    request: Request, session: ReadDep, managed: OrganizationDep, key_id: PathId
) -> Response:
    listing = next(
        (
            listing
            for listing in await api_key_service.list_with_status(session, managed.organization.id)
            if listing.key.id == key_id
        ),
        None,
    )
    # One this person may not revoke is not offered, and answers like a missing one.
    if listing is None or not managed.viewer.can_revoke(listing.key):
        raise KeyNotFound()
    return render(
        request, "keys/revoke.html", managed.viewer, section=SECTION.name, listing=listing
    )


@router.post("/{key_id}/revoke")
async def revoke(session: DbDep, managed: OrganizationDep, key_id: PathId) -> Response:
    key = await api_key_service.revoke_in(
        session, managed.organization.id, key_id, managed.viewer.user.id, managed.role
    )
    return await back_with(
        session,
        managed.viewer,
        PAGE,
        notice=f"Key “{key.name}” ({key.prefix}…) is revoked: it fails from now on.",
    )
