"""Verifying webhook deliveries: Standard Webhooks signatures, checked by the
`standardwebhooks` package (the one the service signs with), and reading
them as typed events (the models' `WebhookPayload`)."""

import binascii
from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError
from standardwebhooks.webhooks import EmptyWebhookSecretError

from formsapi_client.models import WebhookPayload, WebhookPayloadAdapter

__all__ = ["WebhookVerificationError", "parse_webhook", "unwrap_webhook", "verify_webhook"]


def verify_webhook(body: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The event a delivery carries (`{"type", "timestamp", "data"}`), once
    its `webhook-signature` is checked against `secret` (the endpoint's
    `whsec_...`) and its `webhook-timestamp` is within 5 minutes of now.

    Pass the body exactly as received, bytes not re-encoded JSON. Raises
    WebhookVerificationError (standardwebhooks' own class) when the delivery
    is forged, altered, stale or malformed; ValueError when `secret` is not a
    signing secret. During a rotation's 24 hours each delivery is signed
    with both secrets, so either verifies it. `headers["webhook-id"]` is the
    event's id: deliveries come at least once, so use it to drop repeats."""
    try:
        hook = Webhook(secret)
    except (binascii.Error, EmptyWebhookSecretError) as error:
        raise ValueError("The secret is not a webhook signing secret (whsec_...).") from error
    try:
        event = hook.verify(body, dict(headers.items()))
    except WebhookVerificationError:
        raise
    except ValueError as error:
        # A malformed signature list, bad base64, or a body that is not UTF-8
        # or JSON: the library raises these as they come.
        raise WebhookVerificationError(f"Malformed delivery: {error}") from error
    if not isinstance(event, dict):
        raise WebhookVerificationError("The delivery's body is not a JSON object.")
    return event


def parse_webhook(payload: Mapping[str, Any]) -> WebhookPayload:
    """A verified delivery's event (what `verify_webhook` returns) as the
    model of its type: `SubmissionCreatedPayload`, `FormDeletedPayload`, ...,
    each with its `data` typed (a thin or redacted submission as its own
    model: check `isinstance`). A type newer than this client reads as an
    `UnknownPayload` keeping every field. Raises pydantic's ValidationError
    (a ValueError) when an event of a known type does not have its shape."""
    return WebhookPayloadAdapter.validate_python(dict(payload))


def unwrap_webhook(body: bytes | str, headers: Mapping[str, str], secret: str) -> WebhookPayload:
    """`verify_webhook`, then `parse_webhook`: the delivery's typed event,
    once its signature and timestamp are checked."""
    return parse_webhook(verify_webhook(body, headers, secret))
