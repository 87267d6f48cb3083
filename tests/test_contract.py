"""The contract check (tests/contract.py) that every API test response goes
through catches what would break a client generated from /v1/openapi.json."""

import json
from typing import Any

import httpx

from formsapi.app import create_app
from formsapi.config import Settings
from tests.contract import Contract

DOCUMENT = create_app(Settings(database_url="sqlite://", redis_url=None)).openapi()
FORM = {
    "id": "frm_1",
    "title": "T",
    "slug": "t",
    "status": "published",
    "responseCount": 0,
    "createdAt": "2026-01-01T00:00:00.000Z",
    "changeSeq": 0,
}


def _json(status: int, body: object, media: str = "application/json") -> httpx.Response:
    return httpx.Response(status, json=body, headers={"content-type": media})


def test_a_response_the_document_promises_passes() -> None:
    page = {"data": [FORM], "pagination": {"page": 1, "limit": 50, "total": 1}}

    assert Contract(DOCUMENT).problems("GET", "/v1/forms", _json(200, page)) == []


def test_what_the_document_does_not_promise_is_caught() -> None:
    contract = Contract(DOCUMENT)
    missing_total = {"data": [FORM], "pagination": {"page": 1, "limit": 50}}
    wrong_status = {**FORM, "status": "deleted"}
    problem = {"type": "/problems/x", "title": "X", "status": 418, "detail": "x"}

    assert "total" in " ".join(contract.problems("GET", "/v1/forms", _json(200, missing_total)))
    assert contract.problems(
        "GET", "/v1/forms", _json(200, {"data": [wrong_status], "pagination": missing_total})
    )
    assert "418" in contract.problems("GET", "/v1/forms", _json(418, problem))[0]
    assert (
        "text/html"
        in contract.problems("GET", "/v1/forms/frm_1", _json(404, problem, "text/html"))[0]
    )


PING: dict[str, Any] = {
    "type": "ping",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "data": {"id": "whe_1", "message": "Hi"},
}
HEADERS = {"webhook-id": "evt_1", "webhook-timestamp": "1767225600", "webhook-signature": "v1,x"}


def test_a_listed_event_s_data_is_held_to_its_type_s_webhook_payload() -> None:
    contract = Contract(DOCUMENT)
    hidden = {**PING, "id": "evt_2", "data": None, "requiredScope": "webhooks:manage"}
    page = {"data": [{**PING, "id": "evt_1"}, hidden], "next": "evt_2", "hasMore": False}
    assert contract.problems("GET", "/v1/events", _json(200, page)) == []

    # Valid as a list item (`data` is any object there), not as a form.deleted.
    mislabelled = {**PING, "id": "evt_1", "type": "form.deleted"}
    found = contract.problems("GET", "/v1/events", _json(200, {**page, "data": [mislabelled]}))
    assert found
    assert all(problem.startswith("event evt_1 (form.deleted): data") for problem in found)


def test_a_delivery_is_held_to_its_type_s_webhook_payload_and_headers() -> None:
    contract = Contract(DOCUMENT)
    assert contract.delivery_problems(HEADERS, json.dumps(PING).encode()) == []

    unsigned = {k: v for k, v in HEADERS.items() if k != "webhook-signature"}
    assert contract.delivery_problems(unsigned, json.dumps(PING).encode()) == [
        "the delivery lacks the header webhook-signature"
    ]
    extra = {**PING, "data": {**PING["data"], "url": "https://example.com/?token=1"}}
    assert "url" in contract.delivery_problems(HEADERS, json.dumps(extra).encode())[0]
    unknown = {**PING, "type": "ping.pong"}
    assert contract.delivery_problems(HEADERS, json.dumps(unknown).encode()) == [
        "delivery evt_1: no webhook is declared for the type 'ping.pong'"
    ]
    assert "not JSON" in contract.delivery_problems(HEADERS, b"{")[0]
