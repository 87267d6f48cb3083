from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from formsapi.form.blocks import Block
from formsapi.kit.schemas import Schema
from formsapi.models import FormStatus


class FormSummary(Schema):
    id: str = Field(examples=["frm_01jd2x8k4m5n6p7q8r9s0t1v2w"])
    title: str
    slug: str
    status: FormStatus
    response_count: int
    created_at: datetime


class FormDetail(FormSummary):
    updated_at: datetime
    version: int = Field(description="Increments whenever the blocks change.")
    blocks: list[Block] = Field(description="Question and layout blocks, in order.")
    answers_schema: dict[str, Any] = Field(
        alias="schema",
        description="JSON Schema (draft 2020-12) of the answers object the blocks define.",
    )


SLUG = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
        description="Lower-case letters, digits and single dashes.",
    ),
]
TITLE = Annotated[str, Field(min_length=1, max_length=200)]


class FormCreate(Schema):
    title: TITLE
    slug: SLUG | None = Field(default=None, description="Default: made from the title.")
    blocks: list[Block] = Field(default_factory=list)


class FormUpdate(Schema):
    """Only the fields sent change. A change of `blocks` makes a new version."""

    title: TITLE | None = None
    slug: SLUG | None = None
    blocks: list[Block] | None = None
    status: FormStatus | None = Field(
        default=None,
        description="draft -> published, published -> closed, closed -> published, "
        "any -> archived; archived forms are read-only.",
    )
