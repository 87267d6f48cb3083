"""The Organization page: its name and plan, and the sites that may show its
hosted forms in a frame (owners and admins change them)."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from formsapi.organization import service as organization_service
from formsapi.web.context import DbDep, FormText, back_with, render
from formsapi.web.pages import Managed, PageRoute, Section

PAGE = "/settings/org"
SECTION = Section("organization", "Organization", PAGE)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)


@router.get("")
async def organization(request: Request, managed: OrganizationDep) -> Response:
    return render(
        request,
        "organization/organization.html",
        managed.viewer,
        section=SECTION.name,
        origins="\n".join(managed.organization.embed_origins or []),
    )


@router.post("/embedding")
async def embedding(session: DbDep, managed: OrganizationDep, origins: FormText = "") -> Response:
    saved = await organization_service.set_embed_origins(
        session, managed.organization.id, managed.role, origins
    )
    notice = (
        f"Your forms may be shown in a frame on {len(saved)} site{'s' * (len(saved) != 1)}."
        if saved
        else "No site may show your forms in a frame."
    )
    return await back_with(session, managed.viewer, PAGE, notice=notice)
