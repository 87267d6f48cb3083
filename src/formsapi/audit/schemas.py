from datetime import datetime
from typing import Literal

from pydantic import Field

from formsapi.kit.schemas import Schema

AuditAction = Literal["respondent.exported", "respondent.erased"]


class AuditActor(Schema):
    kind: Literal["member", "key"] = Field(
        description="member: a person in the settings area; key: an API key."
    )
    id: str = Field(description="The person's user id or the key's id.")
    name: str = Field(description="The person's email address or the key's name, as it was.")


class AuditEntryOut(Schema):
    """Who exported or erased a respondent's data, and when: never what was
    searched for nor any answer."""

    id: str
    action: AuditAction
    actor: AuditActor
    count: int = Field(description="Submissions and partial responses exported or erased.")
    created_at: datetime


class AuditEntries(Schema):
    data: list[AuditEntryOut] = Field(description="Newest first.")
