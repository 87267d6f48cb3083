from datetime import datetime
from typing import Any

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
