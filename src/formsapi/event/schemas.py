from datetime import datetime
from typing import Any

from pydantic import Field

from formsapi.kit.schemas import Schema
from formsapi.models import EventType


class EventOut(Schema):
    """What changed. A webhook carries the same `type`, `timestamp` and
    `data`, and the event's `id` in its `webhook-id` header."""

    id: str = Field(examples=["evt_01jd2xa1b2c3d4e5f6g7h8j9k0"])
    type: EventType
    timestamp: datetime = Field(description="When the change was made.")
    data: dict[str, Any] | None = Field(
        description="The resource as the API returns it when the change was made (a "
        "submission with its `version` and `changeSeq`, a form, a deleted one's id), so a "
        'receiver can drop a stale update. Over 20 KB it is thin: `"thin": true` with the '
        "id, versions and `url` to read it from. `form.status_changed` adds `from` and `to` "
        "(and `reason` when the form's schedule or limit moved it). "
        "A submission deleted since (or whose form was) has its `answers` erased from its "
        'events: `"redacted": true` says so. Null when the key cannot read the resource '
        "(`requiredScope` names the scope that would show it). Each type's is typed in the "
        "document's `webhooks`: the `data` of that type's payload (`SubmissionCreatedPayload`, "
        "...), the same an endpoint is sent."
    )
    required_scope: str | None = Field(
        default=None,
        description="Present when `data` is null: the scope that reads this event's data.",
        examples=["submissions:read"],
    )


class Events(Schema):
    data: list[EventOut] = Field(description="Events oldest first.")
    next: str | None = Field(
        description="The `after` of your next call (null when there has been no event yet)."
    )
    has_more: bool = Field(description="More events are waiting: call again at once.")
