from datetime import datetime
from typing import Literal

from pydantic import Field, StrictInt, model_validator

from formsapi.kit.schemas import CleanStr, Schema

MAX_LINKS = 500  # made by one request


class Recipient(Schema):
    email: CleanStr | None = Field(
        default=None,
        max_length=320,
        description="Goes into the form's hidden field `email`, when it has one.",
    )
    label: CleanStr | None = Field(
        default=None,
        max_length=200,
        description="Goes into the form's hidden field `label`, when it has one: "
        "whom the link was for, in your words.",
    )


class InvitationCreate(Schema):
    """Send `count` for links that say nothing of whom they are for, or
    `recipients`, one link each."""

    count: StrictInt | None = Field(default=None, ge=1, le=MAX_LINKS, description="Links to make.")
    recipients: list[Recipient] | None = Field(
        default=None, min_length=1, max_length=MAX_LINKS, description="One link for each."
    )

    @model_validator(mode="after")
    def _one_of(self) -> "InvitationCreate":
        if (self.count is None) == (self.recipients is None):
            raise ValueError("send either `count` or `recipients`")
        return self


class Invitation(Schema):
    id: str = Field(examples=["inv_01jd2x8k4m5n6p7q8r9s0t1v2w"])
    email: str | None
    label: str | None
    status: Literal["open", "used", "revoked"] = Field(
        description="open: not answered yet; used: answered (once, for good); revoked."
    )
    created_at: datetime
    used_at: datetime | None
    revoked_at: datetime | None


class InvitationMade(Invitation):
    token: str = Field(description="The link's secret: shown this once, never again.")
    url: str = Field(description="The link to send: the form's hosted page with the token.")


class InvitationsMade(Schema):
    data: list[InvitationMade]
