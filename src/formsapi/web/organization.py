"""The Organization page: its name and plan, and the sites that may show its
hosted forms in a frame (owners and admins change them)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from formsapi.errors import FormsAPIError
from formsapi.organization import service as organization_service
from formsapi.web.context import DbDep, FormText, ViewerDep, back_with, render, see_other

router = APIRouter(prefix="/settings/org")

PAGE = "/settings/org"


@router.get("")
async def organization(request: Request, viewer: ViewerDep) -> Response:
    if viewer.organization is None:
        return render(request, "no_organization.html", viewer, section="organization")
    return render(
        request,
        "organization.html",
        viewer,
        section="organization",
        origins="\n".join(viewer.organization.embed_origins or []),
    )


@router.post("/embedding")
async def embedding(session: DbDep, viewer: ViewerDep, origins: FormText = "") -> Response:
    if viewer.organization is None or viewer.role is None:
        return see_other(PAGE)
    try:
        saved = await organization_service.set_embed_origins(
            session, viewer.organization.id, viewer.role, origins
        )
    except FormsAPIError as error:
        return await back_with(session, viewer, PAGE, error=error.detail)
    notice = (
        f"Your forms may be shown in a frame on {len(saved)} site{'s' * (len(saved) != 1)}."
        if saved
        else "No site may show your forms in a frame."
    )
    return await back_with(session, viewer, PAGE, notice=notice)
