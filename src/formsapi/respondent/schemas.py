from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from formsapi.kit.schemas import CleanStr, Schema
from formsapi.language.blocks import KEY_PATTERN
from formsapi.language.definition import HIDDEN_VALUE_MAX
from formsapi.submission.schemas import SubmissionDetail


class RespondentQuery(Schema):
    """Whom to find: `email`, or `field` and `value`. In the body, never in
    the URL: addresses in URLs end up in the logs of every proxy on the way."""

    email: CleanStr | None = Field(
        default=None,
        min_length=1,
        max_length=254,
        description="Find by the answer to any question of type email, in every form (ASCII "
        "letters compared case-insensitively).",
        examples=["ada@example.com"],
    )
    field: str | None = Field(
        default=None,
        pattern=KEY_PATTERN,
        max_length=64,
        description="Or find by this hidden field (its key) of the organization's forms ...",
        examples=["member_id"],
    )
    value: CleanStr | None = Field(
        default=None,
        min_length=1,
        max_length=HIDDEN_VALUE_MAX,
        description="... equal to this value exactly.",
    )


class RespondentPartial(Schema):
    """A partial response (a respondent on their way through a form with pages)."""

    id: str
    form_id: str
    started_at: datetime
    updated_at: datetime
    expires_at: datetime = Field(description="When it is purged with its answers.")
    last_page: int = Field(ge=1, description="The furthest page reached, counting from 1.")
    answers: dict[str, Any] = Field(description="The answers so far, as the hosted page took them.")


class RespondentData(Schema):
    """Everything kept of one respondent's answers in the organization."""

    submissions: list[SubmissionDetail] = Field(
        description="Their submissions, in every form, oldest first, as the API shows them."
    )
    partials: list[RespondentPartial] = Field(
        description="Their partial responses not completed (a completed one's answers went "
        "into its submission)."
    )
    complete: bool = Field(
        description="false when more matched than one request returns (1000 submissions or "
        "1000 partials): the first are listed; erase them and ask again for the rest."
    )


class RespondentErased(Schema):
    submissions: int = Field(description="Submissions deleted.")
    partials: int = Field(description="Partial responses deleted.")
    more: bool = Field(
        description="true when more matched than one request erases (1000 of each): send it again."
    )


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
