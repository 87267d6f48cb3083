"""The forms of the active organization, one form's page, and its CSV download."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import FormNotFound
from formsapi.form import service as form_service
from formsapi.form.blocks import BlockList, questions
from formsapi.kit.pagination import PageParams
from formsapi.models import Form
from formsapi.submission import export
from formsapi.submission import service as submission_service
from formsapi.web.chart import daily_bars
from formsapi.web.context import SECURITY_HEADERS, PathId, ReadDep, Viewer, ViewerDep, render

router = APIRouter(prefix="/forms")

PER_PAGE = 50
RECENT = 20
TABLE_COLUMNS = 5  # answers shown in the recent submissions table; the CSV has them all


def _not_found(request: Request, viewer: Viewer) -> Response:
    return render(
        request,
        "message.html",
        viewer,
        404,
        heading="Form not found",
        message="There is no such form in this organization.",
        section="forms",
    )


async def _find(
    request: Request, session: AsyncSession, viewer: Viewer, form_id: str
) -> Form | Response:
    """The active organization's form, or the page saying there is none."""
    if viewer.organization is None:
        return render(request, "no_organization.html", viewer, section="forms")
    try:
        return await form_service.get(session, viewer.organization.id, form_id)
    except FormNotFound:
        return _not_found(request, viewer)


@router.get("")
async def forms(
    request: Request,
    session: ReadDep,
    viewer: ViewerDep,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    if viewer.organization is None:
        return render(request, "no_organization.html", viewer, section="forms")
    rows, total = await form_service.list_page(
        session, viewer.organization.id, PageParams(page=page, limit=PER_PAGE)
    )
    return render(
        request,
        "forms.html",
        viewer,
        section="forms",
        forms=rows,
        page=page,
        pages=max(1, -(-total // PER_PAGE)),
        total=total,
    )


@router.get("/{form_id}")
async def form_page(
    request: Request, session: ReadDep, viewer: ViewerDep, form_id: PathId
) -> Response:
    form = await _find(request, session, viewer, form_id)
    if isinstance(form, Response):
        return form
    organization_id = form.organization_id
    blocks = BlockList.validate_python(form.blocks)
    asked = questions(blocks)
    recent = await submission_service.recent(session, organization_id, form.id, RECENT)
    days = await export.daily_counts(session, organization_id, form.id)
    return render(
        request,
        "form.html",
        viewer,
        section="forms",
        form=form,
        blocks=blocks,
        table_questions=asked[:TABLE_COLUMNS],
        more_columns=max(0, len(asked) - TABLE_COLUMNS),
        recent=recent,
        chart=daily_bars(days),
        public_url=f"/f/{form.id}" if form.status in ("published", "closed") else None,
    )


@router.get("/{form_id}/submissions.csv")
async def download_csv(
    request: Request, session: ReadDep, viewer: ViewerDep, form_id: PathId
) -> Response:
    form = await _find(request, session, viewer, form_id)
    if isinstance(form, Response):
        return form
    organization_id = form.organization_id
    keys = await export.columns(session, organization_id, form.id)
    return StreamingResponse(
        export.csv_chunks(
            request.app.state.read_sessionmaker, organization_id, form.id, form.change_seq, keys
        ),
        media_type="text/csv; charset=utf-8",
        headers={
            **SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="{export.filename(form.slug)}"',
            "X-Change-Seq": str(form.change_seq),
        },
    )
