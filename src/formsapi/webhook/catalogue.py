"""The event catalogue: each event type's `data`, typed, and the payload a
webhook delivers for it (`{type, timestamp, data}`, Standard Webhooks). The
OpenAPI document declares them under `webhooks` (app.py), the events list's
`data` is the same per type, and the Python client mirrors them.

Documentation and contract only: events are written as JSON text where the
change is made (form, submission and webhook services) and sent as stored;
nothing here builds or checks them at run time. The tests hold every
delivery and every listed event to these models.

Here rather than in `event`: these models are the form's, the submission's
and the endpoint's as the API returns them, and those packages record their
events through `event`, which therefore cannot import them."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from formsapi.form.schemas import FormDetail
from formsapi.kit.schemas import Schema
from formsapi.models import EventType, FormStatus
from formsapi.submission.schemas import SubmissionDeleted, SubmissionDetail

_URL = Field(description="Where to read it whole (GET, with a key that reads it).")
_REDACTED = Field(
    default=False,
    description="true when the submission was deleted since (or its form was): its answers "
    "are erased from its events. Absent otherwise.",
)

# Submissions.


class SubmissionRedacted(Schema):
    """A submission as its event keeps it once the submission (or its form)
    was deleted: as the API returned it, without `answers`."""

    id: str
    form_id: str
    form_version: int
    submitted_at: datetime
    updated_at: datetime
    version: int
    change_seq: int
    ending: str | None
    language: str | None = None
    redacted: Literal[True]


class SubmissionThin(Schema):
    """A submission too large to carry (its JSON over 20 KB): its id and
    versions, and where to read it."""

    id: str
    form_id: str
    version: int
    change_seq: int
    url: str = _URL
    thin: Literal[True]
    redacted: bool = _REDACTED


def _flag(value: Any, name: str) -> bool:
    return bool(value.get(name) if isinstance(value, dict) else getattr(value, name, None))


def _submission_tag(value: Any) -> str:
    return "thin" if _flag(value, "thin") else "redacted" if _flag(value, "redacted") else "whole"


SubmissionData = Annotated[
    Annotated[SubmissionDetail, Tag("whole")]
    | Annotated[SubmissionRedacted, Tag("redacted")]
    | Annotated[SubmissionThin, Tag("thin")],
    Discriminator(_submission_tag),
]


class SubmissionTombstone(SubmissionDeleted):
    """A deleted submission: its form, and its last place in the form's change feed."""

    form_id: str


# Forms.


class FormThin(Schema):
    """A form too large to carry (its JSON over 20 KB): its id and version,
    and where to read it."""

    id: str
    version: int
    updated_at: datetime
    url: str = _URL
    thin: Literal[True]


_REASON = Field(
    default=None,
    description="Why the status moved by itself: `opensAt`, `closesAt` or `maxSubmissions` "
    "(the form's schedule or limit); absent when a person moved it.",
)


class FormStatusChange(FormDetail):
    """The form as the API returns it, and the status change."""

    from_: FormStatus = Field(alias="from")
    to: FormStatus
    reason: Literal["opensAt", "closesAt", "maxSubmissions"] | None = _REASON


class FormStatusChangeThin(FormThin):
    """A form too large to carry, and the status change."""

    from_: FormStatus = Field(alias="from")
    to: FormStatus
    reason: Literal["opensAt", "closesAt", "maxSubmissions"] | None = _REASON


def _form_tag(value: Any) -> str:
    return "thin" if _flag(value, "thin") else "whole"


FormData = Annotated[
    Annotated[FormDetail, Tag("whole")] | Annotated[FormThin, Tag("thin")],
    Discriminator(_form_tag),
]
FormStatusData = Annotated[
    Annotated[FormStatusChange, Tag("whole")] | Annotated[FormStatusChangeThin, Tag("thin")],
    Discriminator(_form_tag),
]


class FormTombstone(Schema):
    """A deleted form: what it was called."""

    id: str
    title: str
    slug: str
    deleted: Literal[True]
    deleted_at: datetime


# Webhook endpoints.


class DisabledEndpoint(Schema):
    """The endpoint as the API returns it (WebhookEndpointOut), less its
    `url`: readers of events need not be able to manage webhooks, and URLs
    often carry a token."""

    id: str
    description: str
    event_types: list[EventType]
    form_ids: list[str]
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class Ping(Schema):
    id: str = Field(description="The endpoint tested.")
    message: str


# Payloads: what a delivery's body is, one model per event type.


class _Payload(Schema):
    timestamp: datetime = Field(
        description="When the change was made; the same on every attempt and resend."
    )


class SubmissionCreatedPayload(_Payload):
    """A submission arrived: the submission as the API returns it (or thin)."""

    type: Literal[EventType.submission_created]
    data: SubmissionData


class SubmissionUpdatedPayload(_Payload):
    """A submission's answers were corrected: the submission as it now is
    (or thin). Its `version` tells a late delivery from a newer one."""

    type: Literal[EventType.submission_updated]
    data: SubmissionData


class SubmissionDeletedPayload(_Payload):
    """A submission was deleted: its tombstone."""

    type: Literal[EventType.submission_deleted]
    data: SubmissionTombstone


class FormCreatedPayload(_Payload):
    """A form was created: the form as the API returns it (or thin)."""

    type: Literal[EventType.form_created]
    data: FormData


class FormUpdatedPayload(_Payload):
    """A form's title, slug or questions changed: the form as it now is (or thin)."""

    type: Literal[EventType.form_updated]
    data: FormData


class FormStatusChangedPayload(_Payload):
    """A form was published, closed or archived: the form, with `from` and `to`."""

    type: Literal[EventType.form_status_changed]
    data: FormStatusData


class FormDeletedPayload(_Payload):
    """A form was deleted (its submissions with it, if it had any)."""

    type: Literal[EventType.form_deleted]
    data: FormTombstone


class WebhookEndpointDisabledPayload(_Payload):
    """One of your webhook endpoints was disabled (it answered 410, asked to
    be, or failed for days): sent to your other endpoints."""

    type: Literal[EventType.webhook_endpoint_disabled]
    data: DisabledEndpoint


class PingPayload(_Payload):
    """A test event (POST /v1/webhook-endpoints/{id}/test): sent to that endpoint only."""

    type: Literal[EventType.ping]
    data: Ping


PAYLOADS: dict[EventType, type[_Payload]] = {
    EventType.submission_created: SubmissionCreatedPayload,
    EventType.submission_updated: SubmissionUpdatedPayload,
    EventType.submission_deleted: SubmissionDeletedPayload,
    EventType.form_created: FormCreatedPayload,
    EventType.form_updated: FormUpdatedPayload,
    EventType.form_status_changed: FormStatusChangedPayload,
    EventType.form_deleted: FormDeletedPayload,
    EventType.webhook_endpoint_disabled: WebhookEndpointDisabledPayload,
    EventType.ping: PingPayload,
}

WebhookPayload = Annotated[
    SubmissionCreatedPayload
    | SubmissionUpdatedPayload
    | SubmissionDeletedPayload
    | FormCreatedPayload
    | FormUpdatedPayload
    | FormStatusChangedPayload
    | FormDeletedPayload
    | WebhookEndpointDisabledPayload
    | PingPayload,
    Field(discriminator="type"),
]
