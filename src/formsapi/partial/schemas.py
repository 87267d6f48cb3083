from datetime import datetime
from typing import Any

from pydantic import Field

from formsapi.kit.schemas import Schema


class PartialOut(Schema):
    """A respondent's unfinished answers to a form with pages."""

    id: str
    started_at: datetime = Field(description="When they reached the second page.")
    updated_at: datetime = Field(description="When they last moved between pages or saved.")
    expires_at: datetime = Field(
        description="When it is purged with its answers, unless they go on: the form's "
        "`resumeDays` after `updatedAt`."
    )
    last_page: int = Field(
        ge=1, description="The furthest page they reached, counting from 1 (where they stopped)."
    )
    answers: dict[str, Any] | None = Field(
        default=None,
        description="Their answers so far, as the hosted page took them: only for keys with "
        "the `submissions:read` scope.",
    )
