"""The event catalogue: every event type, in each shape its `data` takes
(whole, thin, redacted), as the real worker delivers it to a receiver on
loopback and as the events list shows it, is the payload the OpenAPI
document's `webhooks` declares for its type, and reads as the Python client's
typed model of it."""

from collections.abc import AsyncIterator
from typing import Any, get_args

import pytest
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.form.schemas import FormDetail
from formsapi.models import EventType
from formsapi.submission.schemas import SubmissionDetail
from formsapi.webhook import catalogue
from formsapi.webhook.schemas import WebhookEndpointOut
from formsapi.webhook.worker import Worker
from formsapi_client import models, unwrap_webhook
from tests.conftest import Api
from tests.support.contract import Contract
from tests.support.factories import BLOCKS, EVERY_SCOPE, create_key, create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver
from tests.support.settled import events_settled

ANSWERS = {"name": "Ada", "colors": "red"}
# Over 20 KB of JSON: its events carry it thin.
BIG_FORM = {
    "title": "Long",
    "blocks": [
        {"type": "long_text", "key": "essay", "title": "Essay", "maxLength": 100_000},
        *(
            {"type": "short_text", "key": f"q{i}", "title": "Q", "description": "d" * 2000}
            for i in range(12)
        ),
    ],
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["k" * 40],
        webhook_allow_private_networks=True,
        webhook_worker="off",  # the test drives its own
        webhook_timeout=10,
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Worker]:
    found = new_worker(engine, settings)
    yield found
    await found.close()


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {name: field.annotation for name, field in model.model_fields.items()}


def test_every_event_type_has_a_payload_declared_as_a_webhook(contract: Contract) -> None:
    assert set(catalogue.PAYLOADS) == set(EventType)
    webhooks = contract.document["webhooks"]
    assert set(webhooks) == {str(type_) for type_ in EventType}
    for type_, payload in catalogue.PAYLOADS.items():
        assert get_args(payload.model_fields["type"].annotation) == (type_,)
        operation = webhooks[type_]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{payload.__name__}"}
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert headers == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    # Declaring payloads splits none of the API's own schemas in two.
    schemas = contract.document["components"]["schemas"]
    assert {"FormDetail", "SubmissionDetail", "WebhookEndpointOut"} <= set(schemas)
    whole = {"FormDetail", "SubmissionDetail", *(p.__name__ for p in catalogue.PAYLOADS.values())}
    assert not [name for name in schemas if name.split("-")[0] in whole and "-" in name]


def test_the_shapes_written_out_are_the_api_s_less_what_they_leave_out() -> None:
    endpoint = _fields(WebhookEndpointOut)
    del endpoint["url"]
    assert _fields(catalogue.DisabledEndpoint) == endpoint
    submission = _fields(SubmissionDetail)
    del submission["answers"]
    redacted = _fields(catalogue.SubmissionRedacted)
    assert (
        redacted.pop("redacted") == catalogue.SubmissionRedacted.model_fields["redacted"].annotation
    )
    assert redacted == submission
    assert _fields(catalogue.FormStatusChange).keys() - _fields(FormDetail).keys() == {
        "from_",
        "to",
        "reason",  # a schedule's or limit's move (form/limits.py)
    }


async def _page(api: Api, key: str, after: str | None) -> dict[str, Any]:
    params = {"limit": 1000} | ({"after": after} if after else {})
    response = await api.get("/v1/events", key, params=params)  # held to the contract
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def _listed(api: Api, key: str) -> list[models.Event]:
    await events_settled(api.settings.database_url.get_secret_value())
    found: list[models.Event] = []
    after = None
    while True:
        page = models.EventsPage.model_validate(await _page(api, key, after))
        found += page.data
        after = page.next
        if not page.has_more:
            return found


def _shape(payload: models.WebhookPayload) -> tuple[str, str]:
    data = payload.data
    name = type(data).__name__
    if isinstance(data, models.SubmissionThin) and data.redacted:
        name += " redacted"
    return payload.type, name


EVERY_SHAPE = {
    ("form.created", "FormDetail"),
    ("form.created", "FormThin"),
    ("form.status_changed", "FormStatusChange"),
    ("form.status_changed", "FormStatusChangeThin"),
    ("form.updated", "FormDetail"),
    ("form.updated", "FormThin"),
    ("submission.created", "SubmissionDetail"),
    ("submission.created", "SubmissionThin"),
    ("submission.created", "SubmissionRedacted"),
    ("submission.created", "SubmissionThin redacted"),
    ("submission.updated", "SubmissionDetail"),
    ("submission.updated", "SubmissionThin"),
    ("submission.deleted", "SubmissionTombstone"),
    ("form.deleted", "FormTombstone"),
    ("webhook_endpoint.disabled", "DisabledEndpoint"),
    ("ping", "Ping"),
}
LISTED_SHAPES = EVERY_SHAPE - {
    ("submission.created", "SubmissionDetail"),
    ("submission.created", "SubmissionThin"),
    ("submission.updated", "SubmissionDetail"),
    ("submission.updated", "SubmissionThin"),
} | {
    ("submission.updated", "SubmissionRedacted"),
    ("submission.updated", "SubmissionThin redacted"),
}


async def test_every_event_delivered_or_listed_is_its_declared_payload_and_reads_typed(
    api: Api, session: AsyncSession, worker: Worker, contract: Contract
) -> None:
    async def gone(_: Received) -> Answer:
        return 410, {}, b""

    org = await create_org(session)
    _, key = await create_key(session, org, scopes=EVERY_SCOPE)
    _, reader = await create_key(session, org, scopes=["events:read"])
    await session.commit()

    async def call(method: str, path: str, expected: int, /, **body: Any) -> dict[str, Any]:
        response = await api.request(method, path, key, json=body or None)
        assert response.status_code == expected, response.text
        return response.json() if response.content else {}

    async with Receiver() as receiver, Receiver(gone) as leaving:
        every = await call("POST", "/v1/webhook-endpoints", 201, url=receiver.url)
        other = await call(
            "POST", "/v1/webhook-endpoints", 201, url=leaving.url, eventTypes=["ping"]
        )

        # Whole and thin: a form and its submission, a large form and a large answer.
        form = await call("POST", "/v1/forms", 201, title="Survey", blocks=BLOCKS)
        forms = f"/v1/forms/{form['id']}"
        await call("PATCH", forms, 200, status="published")
        await call("PATCH", forms, 200, title="Poll")
        sub = await call("POST", f"{forms}/submissions", 201, answers=ANSWERS)
        await call("PATCH", f"{forms}/submissions/{sub['id']}", 200, answers={"name": "Bo"})
        big = await call("POST", "/v1/forms", 201, **BIG_FORM)
        bigs = f"/v1/forms/{big['id']}"
        await call("PATCH", bigs, 200, status="published")
        await call("PATCH", bigs, 200, title="Longer")
        essay = await call("POST", f"{bigs}/submissions", 201, answers={"essay": "e" * 25_000})
        await call(
            "PATCH", f"{bigs}/submissions/{essay['id']}", 200, answers={"essay": "f" * 25_000}
        )
        await worker.drain()

        # Redacted: submissions deleted before their events went out; then
        # the tombstones, a ping, and an endpoint answering 410.
        await call("DELETE", f"{forms}/submissions/{sub['id']}", 204)
        gone_sub = await call("POST", f"{forms}/submissions", 201, answers=ANSWERS)
        await call("DELETE", f"{forms}/submissions/{gone_sub['id']}", 204)
        await call("POST", f"{bigs}/submissions", 201, answers={"essay": "g" * 25_000})
        await call("DELETE", f"{bigs}?deleteSubmissions=true", 204)
        await call("DELETE", forms, 204)
        await call("POST", f"/v1/webhook-endpoints/{every['id']}/test", 202)
        await call("POST", f"/v1/webhook-endpoints/{other['id']}/test", 202)
        await worker.drain()
        await worker.drain()  # the disabled endpoint's event, fanned out

    deliveries = [(request, every["secret"]) for request in receiver.received]
    deliveries += [(request, other["secret"]) for request in leaving.received]
    shapes = set()
    for request, secret in deliveries:
        assert contract.delivery_problems(request.headers, request.body) == []
        payload = unwrap_webhook(request.body, request.headers, secret)
        assert isinstance(payload, models.PAYLOAD_TYPES[payload.type])
        shapes.add(_shape(payload))
    assert shapes == EVERY_SHAPE

    listed = await _listed(api, key)
    typed = [event.payload() for event in listed]
    # What remains: every submission was deleted since, so its answers are erased.
    assert {_shape(payload) for payload in typed if payload is not None} == LISTED_SHAPES
    # A key that cannot read what an event carries lists it with no data.
    hidden = await _listed(api, reader)
    assert [event.id for event in hidden] == [event.id for event in listed]
    assert {event.payload() for event in hidden} == {None}
