"""Verifying webhook deliveries: Standard Webhooks signatures, checked by the
`standardwebhooks` package (the one the service signs with)."""

import binascii
from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError
from standardwebhooks.webhooks import EmptyWebhookSecretError

__all__ = ["WebhookVerificationError", "verify_webhook"]


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
