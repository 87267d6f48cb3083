from datetime import datetime
from typing import Literal

from pydantic import Field, StrictBool

from formsapi.kit.schemas import CleanStr, Schema
from formsapi.models import EventType

_URL = Field(
    max_length=2048,
    description="Where to POST events: https, on a public address (private, loopback and "
    "metadata addresses are refused unless FORMSAPI_WEBHOOK_ALLOW_PRIVATE_NETWORKS is set).",
    examples=["https://example.com/hooks/formsapi"],
)


class WebhookEndpointCreate(Schema):
    url: str = _URL
    description: CleanStr = Field(default="", max_length=500)
    event_types: list[EventType] = Field(
        default_factory=list,
        max_length=len(EventType),
        description="Only these event types; empty (the default) for every type.",
    )
    form_ids: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="Only these forms' events; empty (the default) for every form.",
    )
    enabled: StrictBool = True


class WebhookEndpointUpdate(Schema):
    url: str | None = Field(default=None, max_length=2048)
    description: CleanStr | None = Field(default=None, max_length=500)
    event_types: list[EventType] | None = Field(default=None, max_length=len(EventType))
    form_ids: list[str] | None = Field(default=None, max_length=100)
    enabled: StrictBool | None = Field(
        default=None, description="true re-enables a disabled endpoint; false pauses it."
    )


class WebhookEndpointOut(Schema):
    id: str = Field(examples=["whe_01jd2xa1b2c3d4e5f6g7h8j9k0"])
    url: str
    description: str
    event_types: list[EventType]
    form_ids: list[str]
    enabled: bool
    disabled_reason: str | None = Field(description="Why it was disabled, when it was.")
    disabled_at: datetime | None
    failing_since: datetime | None = Field(
        description="Every delivery has failed since then; five days of it disable the endpoint."
    )
    previous_secret_expires_at: datetime | None = Field(
        description="After a rotation, the previous secret signs too until then."
    )
    created_at: datetime
    updated_at: datetime


class WebhookEndpointCreated(WebhookEndpointOut):
    secret: str = Field(
        description="The signing secret (`whsec_...`), shown this once: store it now.",
        examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    )


class SecretRotated(Schema):
    secret: str = Field(description="The new signing secret, shown this once.")
    previous_secret_expires_at: datetime = Field(
        description="Until then each delivery carries a signature by the old secret too."
    )


class Recover(Schema):
    since: datetime = Field(
        description="Resend every failed delivery since then, and send every event since "
        "then the endpoint never got (while it was disabled, say); events are kept 30 days."
    )


class Recovered(Schema):
    queued: int = Field(
        description="Deliveries due again now. One call looks through at most 10,000 "
        "missed events: call again until it answers 0."
    )


class Attempt(Schema):
    attempted_at: datetime
    duration_ms: int
    status_code: int | None
    response_body: str = Field(description="The first 2 KB of the answer.")
    error: str | None


class DeliveryOut(Schema):
    id: str
    event_id: str = Field(description="The `webhook-id` header of every attempt.")
    event_type: EventType
    status: Literal["pending", "succeeded", "failed"]
    attempts: int
    next_attempt_at: datetime | None = Field(description="When pending: the next attempt.")
    last_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime


class DeliveryDetail(DeliveryOut):
    attempt_log: list[Attempt] = Field(description="Every attempt, oldest first.")


class TestSent(Schema):
    event_id: str
    delivery_id: str
