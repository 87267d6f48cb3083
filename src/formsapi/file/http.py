"""Taking and serving files over HTTP: what the API, the hosted page and
the settings area share (an upload's body streamed in, a signed link, a
file's bytes as an attachment no browser runs)."""

from datetime import timedelta
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import StreamingResponse

from formsapi.config import Settings
from formsapi.errors import NotReady, ValidationFailed
from formsapi.file import service
from formsapi.file.storage import Storages
from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.models import File, Form
from formsapi.request_body import streamed
from formsapi.services import services

NO_STORE = {"Cache-Control": "private, no-store"}


async def receive(
    request: Request,
    form: Form,
    key: str | None,
    name: str | None,
    allowance: service.Allowance | None = None,
) -> File:
    """An upload to one of the form's questions (the API's and, with the
    `allowance` of whoever sends it, the hosted page's: bounded then by the
    form's room for uploads no submission took)."""
    settings: Settings = services(request).settings
    length = request.headers.get("content-length")
    upload = service.Upload(
        key,
        name,
        int(length) if length and length.isdigit() else None,
        streamed(request, settings.upload_idle_timeout, settings.upload_min_rate),
    )
    limits = service.Limits(
        settings.upload_max_bytes,
        timedelta(hours=settings.upload_orphan_hours),
        settings.upload_orphan_bytes_per_form if allowance is not None else None,
    )
    version = await form_service.version_of(
        services(request).read_sessionmaker, services(request).fair_share, form
    )
    return await service.receive(
        services(request).sessionmaker,
        services(request).storages,
        form,
        version,
        upload,
        limits,
        allowance,
    )


def signed_link(request: Request, file_id: str, seconds: int) -> tuple[str, Any]:
    """A signed link to a file (the API's and the settings area's)."""
    settings: Settings = services(request).settings
    box = services(request).secret_box
    if box is None:
        raise NotReady("Signed links need FORMSAPI_SECRET_KEY to be set.")
    if seconds > settings.file_link_max_seconds:
        raise ValidationFailed(
            "The link would live too long.",
            errors=[
                {
                    "pointer": "/expiresIn",
                    "detail": f"must be at most {settings.file_link_max_seconds} seconds",
                }
            ],
        )
    return service.link(box, settings.public_url, file_id, seconds, utcnow())


async def download(storages: Storages, file: File) -> StreamingResponse:
    """A file's bytes as an attachment that no browser runs or sniffs. The
    first piece is read before the answer starts, so bytes the storage has
    lost answer 404, and a store that fails 503, not a 200 cut short."""
    pieces = await service.content(storages, file)
    ascii_name = file.name.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return StreamingResponse(
        pieces,
        media_type=file.content_type,
        headers={
            "Content-Length": str(file.size),
            "Content-Disposition": (
                f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(file.name)}"
            ),
            "ETag": f'"{file.sha256.hex()}"' if file.sha256 else "",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            **NO_STORE,
        },
    )
