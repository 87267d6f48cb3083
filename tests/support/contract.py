"""Every response the API tests get is checked against the service's own
OpenAPI document: its status is one the operation documents, its content type
one it declares, and its body valid against that response's schema. So a
client generated from /v1/openapi.json cannot break on what the service sends.

Events too: each event the events list shows with its `data` must be the
payload the document's `webhooks` declares for its type, and so must each
delivery a test's receiver gets (`delivery_problems`).
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema_rs

_ROOT = "urn:formsapi:openapi"


@dataclass
class Contract:
    """Checked with jsonschema_rs (Rust, about a hundred times the speed of
    the pure-Python validator on our pages): every API test's every response
    goes through here."""

    document: dict[str, Any]
    _validators: dict[str, jsonschema_rs.Validator] = field(default_factory=dict)

    @cached_property
    def _registry(self) -> jsonschema_rs.Registry:
        return jsonschema_rs.Registry([(_ROOT, self.document)], draft=jsonschema_rs.Draft202012)

    @cached_property
    def _paths(self) -> list[tuple[re.Pattern[str], str]]:
        return [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"), template)
            for template in self.document["paths"]
        ]

    def _validator(self, pointer: str) -> jsonschema_rs.Validator:
        """The validator of the schema at `pointer` (its tokens already
        escaped) in the document; formats (date-time) are checked too."""
        validator = self._validators.get(pointer)
        if validator is None:
            # A URI fragment: the path templates' braces are percent-encoded.
            reference = f"{_ROOT}#/{quote(pointer, safe='/~')}"
            validator = self._validators[pointer] = jsonschema_rs.Draft202012Validator(
                {"$ref": reference}, registry=self._registry, validate_formats=True
            )
        return validator

    def payload_problems(self, payload: object, where: str = "payload") -> list[str]:
        """What in an event's `{type, timestamp, data}` the `webhooks` entry
        of its type does not promise (empty: all of it)."""
        if not isinstance(payload, dict):
            return [f"{where}: not a JSON object"]
        type_ = payload.get("type")
        webhooks = self.document.get("webhooks", {})
        if not isinstance(type_, str) or "post" not in webhooks.get(type_, {}):
            return [f"{where}: no webhook is declared for the type {type_!r}"]
        pointer = "/".join(
            _escaped(part)
            for part in ("webhooks", type_, "post", "requestBody", "content", "application/json")
        )
        return [
            f"{where} ({type_}): {'/'.join(map(str, error.instance_path))}: {error.message}"
            for error in self._validator(f"{pointer}/schema").iter_errors(payload)
        ]

    def delivery_problems(self, headers: Mapping[str, str], body: bytes) -> list[str]:
        """What in a webhook delivery (the headers and body a receiver got)
        the document's `webhooks` entry for its type does not promise."""
        try:
            payload = json.loads(body)
        except ValueError as error:
            return [f"the delivery's body is not JSON: {error}"]
        found = self.payload_problems(payload, f"delivery {headers.get('webhook-id')}")
        if found:
            return found
        operation = self.document["webhooks"][payload["type"]]["post"]
        lowered = {name.lower() for name in headers}
        return [
            f"the delivery lacks the header {parameter['name']}"
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "header"
            and parameter.get("required")
            and parameter["name"].lower() not in lowered
        ]

    def problems(self, method: str, path: str, response: httpx.Response) -> list[str]:
        """What in `response` the document does not promise (empty: all of it)."""
        template = next((t for pattern, t in self._paths if pattern.match(path)), None)
        if template is None:
            return []  # not an operation of the API (a 404 for an unknown path)
        operation = self.document["paths"][template].get(method.lower())
        if operation is None:
            return [] if response.status_code == 405 else [f"{method} {template} undocumented"]
        responses = operation["responses"]
        status = str(response.status_code)
        if status not in responses:
            return [f"{method} {template} answered {status}, not one of {sorted(responses)}"]
        content = responses[status].get("content", {})
        media = response.headers.get("content-type", "").split(";")[0]
        if not content:
            return [] if not response.content else [f"{status} has a body it does not declare"]
        if media not in content:
            if "*/*" in content:
                return []  # bytes of any type (a file): nothing to check them against
            return [f"{method} {template} {status} sent {media!r}, not one of {sorted(content)}"]
        pointer = "/".join(
            _escaped(part)
            for part in ("paths", template, method.lower(), "responses", status, "content", media)
        )
        if "schema" not in content[media]:
            return []
        validator = self._validator(f"{pointer}/schema")
        if media == "text/csv":
            return []  # a text body; its columns are the tests' business
        # NDJSON (a sequence of documents): the schema is each line's.
        documents = (
            [json.loads(line) for line in response.content.splitlines()]
            if media == "application/x-ndjson"
            else [response.json()]
        )
        found = [
            f"{method} {path} {status}: {'/'.join(map(str, error.instance_path))}: {error.message}"
            for document in documents
            for error in validator.iter_errors(document)
        ]
        if not found and (method.upper(), template, status) == ("GET", "/v1/events", "200"):
            found = self._listed_event_problems(documents[0])
        return found

    def _listed_event_problems(self, page: dict[str, Any]) -> list[str]:
        """A listed event with its data carries what a delivery of it would."""
        return [
            problem
            for event in page["data"]
            if event["data"] is not None
            for problem in self.payload_problems(
                {key: event[key] for key in ("type", "timestamp", "data")}, f"event {event['id']}"
            )
        ]


def _escaped(part: str) -> str:
    """A JSON pointer's reference token (RFC 6901)."""
    return part.replace("~", "~0").replace("/", "~1")
