"""The contract check (tests/contract.py) that every API test response goes
through catches what would break a client generated from /v1/openapi.json."""

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
