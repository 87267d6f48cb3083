"""Webhook endpoints through the client, and `verify_webhook` on a delivery
the server really signed and sent to a receiver on loopback: accepted as
sent, refused when altered, signed by another secret or stale."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook

from formsapi_client import (
    AsyncClient,
    NotFound,
    WebhookVerificationError,
    parse_webhook,
    unwrap_webhook,
    verify_webhook,
)
from formsapi_client.models import (
    FormCreatedPayload,
    FormDetail,
    PingPayload,
    SubmissionCreatedPayload,
    SubmissionRedacted,
    SubmissionThin,
    UnknownPayload,
)
from tests.client.conftest import Live
from tests.support.factories import BLOCKS
from tests.support.receiver import Received, Receiver


async def delivered(receiver: Receiver, count: int) -> list[Received]:
    for _ in range(500):
        if len(receiver.received) >= count:
            return receiver.received
        await asyncio.sleep(0.02)
    raise AssertionError(f"{len(receiver.received)} deliveries arrived, not {count}")


async def test_a_real_delivery_verifies_and_a_tampered_one_does_not(live: Live) -> None:
    async with Receiver() as receiver, AsyncClient(live.base_url, live.secret) as client:
        endpoint = await client.webhook_endpoints.create(
            receiver.url, event_types=["ping"], description="client test"
        )
        sent = await client.webhook_endpoints.test(endpoint.id)
        [delivery] = await delivered(receiver, 1)

        event = verify_webhook(delivery.body, delivery.headers, endpoint.secret)
        assert event["type"] == "ping"
        assert delivery.headers["webhook-id"] == sent.event_id
        assert verify_webhook(delivery.body.decode(), delivery.headers, endpoint.secret) == event

        with pytest.raises(WebhookVerificationError):
            verify_webhook(
                delivery.body.replace(b"ping", b"pong"), delivery.headers, endpoint.secret
            )
        other = (await client.webhook_endpoints.rotate_secret(endpoint.id)).secret
        with pytest.raises(WebhookVerificationError):
            verify_webhook(delivery.body, delivery.headers, other)
        with pytest.raises(WebhookVerificationError):
            verify_webhook(delivery.body, {**delivery.headers, "webhook-signature": "v1"}, other)
        with pytest.raises(ValueError, match="signing secret"):
            verify_webhook(delivery.body, delivery.headers, "whsec_%%%")

        # A rotation's deliveries are signed by both secrets: either verifies.
        await client.webhook_endpoints.test(endpoint.id)
        [_, rotated] = await delivered(receiver, 2)
        assert verify_webhook(rotated.body, rotated.headers, endpoint.secret)["type"] == "ping"
        assert verify_webhook(rotated.body, rotated.headers, other)["type"] == "ping"


def test_a_delivery_signed_long_ago_is_refused() -> None:
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = '{"type":"ping","timestamp":"2026-11-23T00:00:00.000Z","data":{}}'
    then = datetime.now(UTC) - timedelta(minutes=10)
    headers = {
        "webhook-id": "evt_1",
        "webhook-timestamp": str(int(then.timestamp())),
        "webhook-signature": Webhook(secret).sign("evt_1", then, body),
    }
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify_webhook(body, headers, secret)
    now = datetime.now(UTC)
    headers |= {
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign("evt_1", now, body),
    }
    assert verify_webhook(body.encode(), headers, secret)["type"] == "ping"


async def test_endpoints_are_managed_and_their_deliveries_read(live: Live) -> None:
    async with Receiver() as receiver, AsyncClient(live.base_url, live.secret) as client:
        endpoint = await client.webhook_endpoints.create(receiver.url, event_types=["ping"])
        assert endpoint.enabled
        assert endpoint.event_types == ["ping"]
        listed = await client.webhook_endpoints.list()
        assert endpoint.id in [e.id for e in listed.data]

        sent = await client.webhook_endpoints.test(endpoint.id)
        await delivered(receiver, 1)
        for _ in range(250):  # the outcome is written just after the answer
            deliveries = await client.webhook_endpoints.deliveries(endpoint.id, status="succeeded")
            if deliveries.data:
                break
            await asyncio.sleep(0.02)
        [delivery] = deliveries.data
        assert (delivery.id, delivery.event_type) == (sent.delivery_id, "ping")
        detail = await client.webhook_endpoints.delivery(endpoint.id, delivery.id)
        assert [a.status_code for a in detail.attempt_log] == [200]

        resent = await client.webhook_endpoints.resend(endpoint.id, delivery.id)
        assert resent.event_id == sent.event_id
        since = datetime.now(UTC) - timedelta(hours=1)
        assert (await client.webhook_endpoints.recover(endpoint.id, since)).queued >= 0

        paused = await client.webhook_endpoints.update(
            endpoint.id, enabled=False, description="paused"
        )
        assert (paused.enabled, paused.description) == (False, "paused")
        assert (await client.webhook_endpoints.get(endpoint.id)).description == "paused"

        await client.webhook_endpoints.delete(endpoint.id)
        with pytest.raises(NotFound):
            await client.webhook_endpoints.get(endpoint.id)


async def test_a_real_delivery_reads_as_the_typed_event_the_events_list_shows(live: Live) -> None:
    async with Receiver() as receiver, AsyncClient(live.base_url, live.secret) as client:
        endpoint = await client.webhook_endpoints.create(
            receiver.url, event_types=["form.created", "ping"]
        )
        await client.webhook_endpoints.test(endpoint.id)
        form = await client.forms.create("Typed", BLOCKS)
        deliveries = await delivered(receiver, 2)
        await client.webhook_endpoints.delete(endpoint.id)
        events = [unwrap_webhook(d.body, d.headers, endpoint.secret) for d in deliveries]

        [ping] = [event for event in events if isinstance(event, PingPayload)]
        assert ping.data.id == endpoint.id
        [created] = [event for event in events if isinstance(event, FormCreatedPayload)]
        assert isinstance(created.data, FormDetail)
        assert created.data == form
        listed = (await client.events.list(types=["form.created"], form_id=form.id)).data
        assert [event.payload() for event in listed] == [created]


def test_each_shape_of_an_event_s_data_reads_as_its_own_model() -> None:
    submission = {
        "id": "sub_1",
        "formId": "frm_1",
        "formVersion": 1,
        "submittedAt": "2026-11-23T00:00:00.000Z",
        "updatedAt": "2026-11-23T00:00:00.000Z",
        "version": 1,
        "changeSeq": 1,
        "ending": None,
    }
    created = {"type": "submission.created", "timestamp": "2026-11-23T00:00:00.000Z"}
    whole = parse_webhook({**created, "data": {**submission, "answers": {"name": "Ada"}}})
    assert isinstance(whole, SubmissionCreatedPayload)
    assert whole.data.answers == {"name": "Ada"}  # type: ignore[union-attr]
    redacted = parse_webhook({**created, "data": {**submission, "redacted": True}})
    assert isinstance(redacted.data, SubmissionRedacted)
    thin = {"id": "sub_1", "formId": "frm_1", "version": 1, "changeSeq": 1, "thin": True}
    url = "/v1/forms/frm_1/submissions/sub_1"
    read = parse_webhook({**created, "data": {**thin, "url": url}})
    assert isinstance(read.data, SubmissionThin)
    assert not read.data.redacted
    gone = parse_webhook({**created, "data": {**thin, "url": url, "redacted": True}})
    assert isinstance(gone.data, SubmissionThin)
    assert gone.data.redacted

    # A type newer than this client reads, with every field kept.
    newer = {"type": "form.renamed", "timestamp": created["timestamp"], "data": {"id": "frm_1"}}
    unknown = parse_webhook({**newer, "extra": 1})
    assert isinstance(unknown, UnknownPayload)
    assert unknown.model_dump(by_alias=True)["extra"] == 1
    with pytest.raises(ValueError, match="data"):
        parse_webhook({**created, "data": {"id": "sub_1"}})
