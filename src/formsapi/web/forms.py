"""The forms of the active organization, one form's page, and its CSV download."""

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest
from formsapi.file import service as file_service
from formsapi.file.endpoints import download, signed_link
from formsapi.form import service as form_service
from formsapi.form.blocks import BlockList, FileUpload, questions
from formsapi.kit.pagination import PageParams
from formsapi.models import File
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
    named = [
        file_id
        for submission in recent
        for file_id in file_service.answered_files(blocks, submission.answers)
    ]
    files = await file_service.named(session, organization_id, form.id, named) if named else []
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
        file_keys={q.key for q in asked if isinstance(q, FileUpload)},
        files={file.id: file for file in files},
    )


async def _file(session: AsyncSession, managed: Managed, form_id: str, file_id: str) -> File:
    file = await file_service.get(session, managed.organization.id, file_id)
    if file.form_id != form_id:
        raise file_service.FileNotFound(file_id)
    return file


@router.get("/{form_id}/files/{file_id}")
async def download_file(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId, file_id: PathId
) -> Response:
    """A file an answer names, downloaded by a member."""
    file = await _file(session, managed, form_id, file_id)
    await session.close()
    return await download(request.app.state.storages, file)


# What a member may choose for a link's life, in seconds, and how it reads.
LINK_LIVES = {3600: "1 hour", 86400: "1 day", 7 * 86400: "7 days"}


@router.get("/{form_id}/files/{file_id}/link")
async def file_link_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId, file_id: PathId
) -> Response:
    file = await _file(session, managed, form_id, file_id)
    return render(
        request, "file_link.html", managed.viewer, section=SECTION.name, file=file, lives=LINK_LIVES
    )


@router.post("/{form_id}/files/{file_id}/link")
async def make_file_link(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    form_id: PathId,
    file_id: PathId,
    seconds: Annotated[int, Form()] = 3600,
) -> Response:
    """A signed link to the file for someone without an account, for the
    time chosen; shown on this page only."""
    file = await _file(session, managed, form_id, file_id)
    if seconds not in LINK_LIVES:
        raise BadRequest("Choose how long the link works.")
    url, expires_at = signed_link(request, file.id, seconds)
    return render(
        request,
        "file_link.html",
        managed.viewer,
        section=SECTION.name,
        file=file,
        lives=LINK_LIVES,
        link=url,
        expires_at=expires_at,
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
