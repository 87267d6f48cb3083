"""The contract check (tests/support/contract.py) that every API test response goes
through catches what would break a client generated from /v1/openapi.json."""

import json
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from formsapi.app import create_app
from formsapi.config import Settings
from tests.support.contract import Contract

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


# What lax Pydantic takes for each of JSON's scalar types and JSON Schema does not.
_NOT_OF_TYPE = {"integer": [True, "5"], "number": [True, "1.5"], "boolean": [1, "true"]}


def _kinds(schema: dict[str, Any]) -> list[str]:
    """The scalar JSON types among `schema`'s own (a type or a list of types)."""
    types = schema.get("type", [])
    return [kind for kind in ([types] if isinstance(types, str) else types) if kind in _NOT_OF_TYPE]


def _scalars(schema: dict[str, Any], seen: set[str]) -> Iterator[tuple[str, str, str, str]]:
    """(component, property, JSON type, where) for every integer, number and
    boolean a property of a schema reachable from `schema` takes: as its
    value, as an item of its list or as a value of its object."""
    components = DOCUMENT["components"]["schemas"]
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name not in seen:
            seen.add(name)
            for found in _scalars(components[name], seen):
                yield (found[0] or name, *found[1:])
        return
    for key, property_ in schema.get("properties", {}).items():
        for alternative in [property_, *property_.get("anyOf", []), *property_.get("oneOf", [])]:
            for where, part in [
                ("value", alternative),
                ("item", alternative.get("items")),
                ("entry", alternative.get("additionalProperties")),
            ]:
                if isinstance(part, dict):
                    yield from (("", key, kind, where) for kind in _kinds(part))
        yield from _scalars(property_, seen)
    for nested in [schema.get("items"), schema.get("additionalProperties")]:
        if isinstance(nested, dict):
            yield from _scalars(nested, seen)
    for alternative in [
        *schema.get("anyOf", []),
        *schema.get("oneOf", []),
        *schema.get("allOf", []),
    ]:
        yield from _scalars(alternative, seen)


def test_the_walk_finds_scalars_in_lists_maps_and_alternatives() -> None:
    schema = {
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}},
            "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "either": {"oneOf": [{"type": "number"}, {"type": "string"}]},
            "maybe": {"type": ["integer", "null"]},
            "text": {"type": "string"},
        }
    }
    assert sorted(_scalars(schema, set())) == [
        ("", "either", "number", "value"),
        ("", "flags", "boolean", "entry"),
        ("", "ids", "integer", "item"),
        ("", "maybe", "integer", "value"),
    ]


def _models() -> dict[str, list[type[BaseModel]]]:
    """The service's models by name: a name two of them share is looked up
    as a list of two, never as whichever was met last."""
    found: dict[str, list[type[BaseModel]]] = {}
    waiting = [BaseModel]
    while waiting:
        model = waiting.pop()
        waiting += model.__subclasses__()
        if model.__module__.startswith("formsapi."):
            found.setdefault(model.__name__, []).append(model)
    return found


def test_every_number_and_flag_a_request_sends_is_taken_as_its_json_type_only() -> None:
    """Lax Pydantic takes true for 1, "5" for 5 and 1 for true: the document
    allows none of them (a fuzz run found `"count": true` making one link)."""
    bodies = [
        content["schema"]
        for operations in DOCUMENT["paths"].values()
        for operation in operations.values()
        for content in operation.get("requestBody", {}).get("content", {}).values()
    ]
    scalars = {found for body in bodies for found in _scalars(body, set())}
    models = _models()
    assert ("InvitationCreate", "count", "integer", "value") in scalars

    taken = []
    for component, key, kind, where in sorted(scalars):
        [model] = models[component.removesuffix("-Input")]
        field = next(f for name, f in model.model_fields.items() if key in (name, f.alias))
        annotation: Any = field.annotation
        adapter: TypeAdapter[Any] = TypeAdapter(
            Annotated[annotation, *field.metadata] if field.metadata else annotation
        )
        for value in _NOT_OF_TYPE[kind]:
            sent = {"value": value, "item": [value], "entry": {"k": value}}[where]
            try:
                adapter.validate_python(sent)
            except ValidationError:
                continue
            taken.append(f"{component}.{key} ({kind}) took {sent!r}")
    assert taken == []
