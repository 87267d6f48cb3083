"""Every response the API tests get is checked against the service's own
OpenAPI document: its status is one the operation documents, its content type
one it declares, and its body valid against that response's schema. So a
client generated from /v1/openapi.json cannot break on what the service sends.
"""

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import httpx
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

_ROOT = "urn:formsapi:openapi"


@dataclass
class Contract:
    document: dict[str, Any]
    _validators: dict[str, Draft202012Validator] = field(default_factory=dict)

    @cached_property
    def _registry(self) -> Registry[Any]:
        resource: Resource[Any] = Resource.from_contents(
            self.document, default_specification=DRAFT202012
        )
        registry: Registry[Any] = Registry().with_resource(_ROOT, resource)
        return registry

    @cached_property
    def _paths(self) -> list[tuple[re.Pattern[str], str]]:
        return [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"), template)
            for template in self.document["paths"]
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
            return [f"{method} {template} {status} sent {media!r}, not one of {sorted(content)}"]
        pointer = "/".join(
            part.replace("~", "~0").replace("/", "~1")
            for part in ("paths", template, method.lower(), "responses", status, "content", media)
        )
        if "schema" not in content[media]:
            return []
        validator = self._validators.get(pointer)
        if validator is None:
            validator = self._validators[pointer] = Draft202012Validator(
                {"$ref": f"{_ROOT}#/{pointer}/schema"},
                registry=self._registry,
                format_checker=FormatChecker(),
            )
        if media == "text/csv":
            return []  # a text body; its columns are the tests' business
        # NDJSON (a sequence of documents): the schema is each line's.
        documents = (
            [json.loads(line) for line in response.content.splitlines()]
            if media == "application/x-ndjson"
            else [response.json()]
        )
        return [
            f"{method} {path} {status}: {'/'.join(map(str, error.absolute_path))}: {error.message}"
            for document in documents
            for error in validator.iter_errors(document)
        ]
