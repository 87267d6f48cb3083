"""A form's embed page: the snippet that shows its hosted page on another
site, which sites may show it (its own list or its organization's), and
the page itself in a frame, as a site that may embed it would show it."""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from markupsafe import escape

from formsapi.form import service as form_service
from formsapi.models import FormStatus
from formsapi.web.context import PathId, ReadDep, public_link, render
from formsapi.web.forms import PAGE, SECTION, OrganizationDep
from formsapi.web.pages import PageRoute

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

# The frame's height in the snippet: a page of a few questions shows whole;
# a longer one scrolls inside the frame.
FRAME_HEIGHT = 640


def snippet(url: str, title: str) -> str:
    """The iframe a site pastes, its `title` naming the frame for screen readers."""
    return (
        f'<iframe src="{escape(url)}" title="{escape(title)}" width="100%" height="{FRAME_HEIGHT}" '
        'style="border:0;max-width:720px" loading="lazy"></iframe>'
    )


@router.get("/{form_id}/embed")
async def embed_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    """Every member may read it; the framing list is changed on the form's
    page (editors, admins and owners)."""
    form = await form_service.get(session, managed.organization.id, form_id)
    own = form.embed_origins
    origins = own if own is not None else (managed.organization.embed_origins or [])
    url = public_link(request, f"/f/{form.id}")
    return render(
        request,
        "embed/embed.html",
        managed.viewer,
        section=SECTION.name,
        form=form,
        snippet=snippet(url, form.title),
        url=url,
        origins=origins,
        own_list=own is not None,
        live=form.status == FormStatus.published,
        frame_height=FRAME_HEIGHT,
    )
