from datetime import datetime

from pydantic import Field, StrictInt

from formsapi.kit.schemas import Schema


class FileOut(Schema):
    """An uploaded file. Answers name it by `id`; its bytes are at `url`."""

    id: str = Field(description="What the file question's answer names.")
    form_id: str | None
    question: str = Field(description="The key of the file question it was uploaded to.")
    submission_id: str | None = Field(
        description="The submission that names it; null until one does (an upload no "
        "submission takes is purged after FORMSAPI_UPLOAD_ORPHAN_HOURS)."
    )
    name: str = Field(description="The name it was uploaded with, without any path.")
    content_type: str = Field(
        description="The type its bytes are, found from them: never the name's or the "
        "uploader's claim. `text/plain` for text of no known format, "
        "`application/octet-stream` for anything else unknown."
    )
    size: int = Field(description="Bytes.")
    sha256: str | None = Field(description="SHA-256 of its bytes, hex.")
    created_at: datetime
    url: str = Field(description="Where a key with `submissions:read` downloads it.")


class FileLinkCreate(Schema):
    expires_in: StrictInt = Field(
        default=3600,
        ge=60,
        description="Seconds the link works for; at most FORMSAPI_FILE_LINK_MAX_SECONDS "
        "(7 days unless set otherwise).",
    )


class FileLink(Schema):
    """A link that downloads the file without a key, until it expires."""

    url: str
    expires_at: datetime
