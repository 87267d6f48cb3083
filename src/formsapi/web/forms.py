"""The forms of the active organization, one form's page, and its CSV download."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse

from formsapi.form import service as form_service
from formsapi.form.blocks import BlockList, questions
from formsapi.kit.pagination import PageParams
from formsapi.submission import export
from formsapi.submission import service as submission_service
from formsapi.web.chart import daily_bars
from formsapi.web.context import SECURITY_HEADERS, PathId, ReadDep, render
from formsapi.web.pages import Managed, PageRoute, Section

PAGE = "/forms"
SECTION = Section("forms", "Forms", PAGE)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute)

PER_PAGE = 50
RECENT = 20
TABLE_COLUMNS = 5  # answers shown in the recent submissions table; the CSV has them all


@router.get("")
async def forms(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    rows, total = await form_service.list_page(
        session, managed.organization.id, PageParams(page=page, limit=PER_PAGE)
    )
    return render(
        request,
        "forms.html",
        managed.viewer,
        section=SECTION.name,
        forms=rows,
        page=page,
        pages=max(1, -(-total // PER_PAGE)),
        total=total,
    )


@router.get("/{form_id}")
async def form_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    form = await form_service.get(session, managed.organization.id, form_id)
    organization_id = form.organization_id
    blocks = BlockList.validate_python(form.blocks)
    asked = questions(blocks)
    recent = await submission_service.recent(session, organization_id, form.id, RECENT)
    days = await export.daily_counts(session, organization_id, form.id)
    return render(
        request,
        "form.html",
        managed.viewer,
        section=SECTION.name,
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
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    form = await form_service.get(session, managed.organization.id, form_id)
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
