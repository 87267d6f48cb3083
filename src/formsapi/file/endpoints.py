from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import Response

from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, requires
from formsapi.errors import problem_responses
from formsapi.file import service
from formsapi.file.http import NO_STORE, download, receive, signed_link
from formsapi.file.schemas import FileLink, FileLinkCreate, FileOut
from formsapi.form import service as form_service
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.time import utcnow
from formsapi.routing import ERRORS_404, FormId, json
from formsapi.services import services

router = APIRouter(prefix="/v1", tags=["Files"], route_class=GuardedRoute)
# Signed links carry their own authority: no key.
links_router = APIRouter(tags=["Files"])

FileId = Annotated[
    str, Path(alias="fileId", pattern=ID_PATTERN, max_length=64, description="A file's id.")
]

_STORE_503 = (
    "The database, or the store files are kept in, cannot be reached or refused the "
    "service; nothing was kept. See `Retry-After`."
)
# Any type: the file's own, as its bytes showed it.
_BYTES: dict[str, Any] = {
    "description": "The file's bytes, as an attachment, with the type found from them.",
    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
}
_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The file's bytes, as they are (not multipart, not base64). Its type "
        "is found from the bytes.",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post(
    "/forms/{formId}/files",
    status_code=201,
    response_model=FileOut,
    responses=problem_responses(
        400,
        401,
        403,
        404,
        408,
        409,
        413,
        415,
        422,
        429,
        503,
        _400="`question` names no file question of the form.",
        _408="Nothing arrived for FORMSAPI_UPLOAD_IDLE_TIMEOUT seconds, or the upload "
        "averaged under FORMSAPI_UPLOAD_MIN_RATE bytes a second.",
        _409="The form is not published.",
        _413="The file is larger than the question's `maxSize` (or the server's limit).",
        _415="The file's bytes are of a type the question does not `accept`.",
        _422="The file is empty.",
        _503=_STORE_503,
    ),
    openapi_extra=requires(Scope.submissions_write) | _UPLOAD_BODY,
)
async def upload_file(
    principal: PrincipalDep,
    request: Request,
    form_id: FormId,
    question: Annotated[
        str, Query(max_length=64, description="The key of the file question it answers.")
    ],
    name: Annotated[
        str | None, Query(max_length=1024, description="The file's name, as the user knows it.")
    ] = None,
) -> Response:
    """Upload a file for a file question of a published form, then send
    its `id` as (part of) that question's answer. The body is the file
    itself, streamed: it may be as large as the question's `maxSize` (and
    the server's FORMSAPI_UPLOAD_MAX_BYTES); its type, found from its bytes,
    must be one the question's `accept` lists. An upload no submission names
    is purged after FORMSAPI_UPLOAD_ORPHAN_HOURS."""
    async with services(request).read_sessionmaker() as session:
        form = await form_service.get(session, principal.organization_id, form_id)
    file = await receive(request, form, question, name)
    return json(service.view(file), 201, NO_STORE)


@router.get(
    "/files/{fileId}",
    response_model=FileOut,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.submissions_read),
)
async def get_file(principal: PrincipalDep, session: ReadSessionDep, file_id: FileId) -> Response:
    """A file's name, type, size and hash, and the submission that names it."""
    return json(service.view(await service.get(session, principal.organization_id, file_id)))


@router.get(
    "/files/{fileId}/content",
    response_class=Response,
    responses={
        200: _BYTES,
        **ERRORS_404,
        **problem_responses(503, _503=_STORE_503),
    },
    openapi_extra=requires(Scope.submissions_read),
)
async def download_file(
    principal: PrincipalDep, session: ReadSessionDep, file_id: FileId, request: Request
) -> Response:
    """The file's bytes, always as an attachment, with its type and name."""
    file = await service.get(session, principal.organization_id, file_id)
    await session.close()  # the bytes are read a chunk at a time, each on its own
    return await download(services(request).storages, file)


@router.post(
    "/files/{fileId}/links",
    status_code=201,
    response_model=FileLink,
    responses=problem_responses(
        400,
        401,
        403,
        404,
        415,
        422,
        429,
        _415="A body was sent, and not as JSON (none at all is fine: an hour's link).",
        _503="Signed links need FORMSAPI_SECRET_KEY to be set.",
    ),
    openapi_extra=requires(Scope.submissions_read),
)
async def create_file_link(
    principal: PrincipalDep,
    session: ReadSessionDep,
    request: Request,
    file_id: FileId,
    body: Annotated[FileLinkCreate, Body()] = FileLinkCreate(),
) -> Response:
    """A link that downloads the file without a key until it expires: for a
    browser, a mail, a tool that cannot send headers. It cannot be revoked
    before then; the file's deletion ends it."""
    file = await service.get(session, principal.organization_id, file_id)
    url, expires_at = signed_link(request, file.id, body.expires_in)
    return Response(
        FileLink(url=url, expires_at=expires_at).model_dump_json(by_alias=True),
        status_code=201,
        media_type="application/json",
        headers=NO_STORE,
    )


@links_router.get(
    "/files/{fileId}",
    response_class=Response,
    openapi_extra={"security": []},
    responses={
        200: _BYTES,
        **problem_responses(
            400,
            403,
            404,
            503,
            _400="`expires` or `signature` is missing or malformed.",
            _403="The link has expired or is not valid.",
            _404="The file is gone.",
            _503=_STORE_503,
        ),
    },
)
async def download_by_link(
    request: Request,
    file_id: FileId,
    expires: Annotated[str, Query(max_length=12)],
    signature: Annotated[str, Query(max_length=64)],
) -> Response:
    """A file through a signed link (POST /v1/files/{fileId}/links): no key."""
    box = services(request).secret_box
    if box is None:
        raise service.LinkInvalid("This link is not valid.")
    service.check_link(box, file_id, expires, signature, utcnow())
    async with services(request).read_sessionmaker() as session:
        file = await service.by_link(session, file_id)
    return await download(services(request).storages, file)
