"""An mkdocs hook: the API reference, generated at every build from the
service's own OpenAPI document (`create_app(...).openapi()`, what
`/v1/openapi.json` serves), so it cannot drift from the code and the site
builds offline.

It adds four pages that no one writes by hand: `reference/api.md` (every
operation: its scope, parameters, body and answers), `reference/events.md`
(the event catalogue: the document's `webhooks`, one per event type),
`reference/schemas.md` (every schema those name) and
`reference/openapi.json` (the document itself)."""

import json
import re
from functools import cache
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

API = "reference/api.md"
EVENTS = "reference/events.md"
SCHEMAS = "reference/schemas.md"
DOCUMENT = "reference/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


@cache
def openapi() -> dict[str, Any]:
    """The document the service serves. An in-memory SQLite engine: the app
    is built, never started, so nothing is opened or written."""
    from formsapi.app import create_app
    from formsapi.config import Settings

    document: dict[str, Any] = create_app(Settings(database_url="sqlite:///:memory:")).openapi()
    return document


def on_files(files: Files, config: MkDocsConfig) -> Files:
    document = openapi()
    pages = {
        API: render_operations(document),
        EVENTS: render_events(document),
        SCHEMAS: render_schemas(document),
        DOCUMENT: json.dumps(document, indent=2, ensure_ascii=False) + "\n",
    }
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    return files


def _cell(text: object) -> str:
    """Text for one table cell: one line, pipes escaped."""
    return re.sub(r"\s*\n\s*", " ", str(text)).replace("|", "\\|").strip()


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


def schema_link(name: str, page: str) -> str:
    target = "" if page == SCHEMAS else "schemas.md"
    return f"[`{name}`]({target}#{name.lower()})"


def type_of(schema: dict[str, Any], page: str) -> str:
    """A schema in a few words, with links to the named schemas it uses."""
    if "$ref" in schema:
        return schema_link(_ref_name(schema["$ref"]), page)
    for combined, joiner in (("anyOf", " or "), ("oneOf", " or "), ("allOf", " and ")):
        if combined in schema:
            return joiner.join(type_of(part, page) for part in schema[combined])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(f"`{k}`" for k in kind)
    if kind == "array":
        return f"list of {type_of(schema.get('items', {}), page)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'], page)}"
    if kind is None:
        return "any"
    return f"`{kind}`" + (f" ({schema['format']})" if "format" in schema else "")


def _bounds(schema: dict[str, Any]) -> str:
    """What a value must be beyond its type: the bounds a schema states."""
    words = {
        "minimum": "at least",
        "maximum": "at most",
        "minLength": "length at least",
        "maxLength": "length at most",
        "minItems": "at least {} items",
        "maxItems": "at most {} items",
        "pattern": "matches",
    }
    found = []
    for name, word in words.items():
        if name in schema:
            value = schema[name]
            shown = f"`{value}`" if name == "pattern" else f"{value:,}"
            found.append(word.format(shown) if "{}" in word else f"{word} {shown}")
    if "default" in schema and schema["default"] is not None:
        found.append(f"default `{json.dumps(schema['default'])}`")
    return "; ".join(found)


def _description(schema: dict[str, Any]) -> str:
    return str(schema.get("description", ""))


def _anchor(method: str, path: str) -> str:
    return f"{method}-{re.sub(r'[^a-z0-9]+', '-', path.lower()).strip('-')}"


def _operations(document: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(tag, method, path, operation) for the API's operations, in the
    document's order within each tag."""
    found = []
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                operation = item[method]
                found.append((operation.get("tags", ["Other"])[0], method, path, operation))
    tags: list[str] = []
    for tag, *_ in found:
        if tag not in tags:
            tags.append(tag)
    return sorted(found, key=lambda entry: tags.index(entry[0]))


def _body_schema(content: dict[str, Any], page: str) -> str:
    return ", ".join(
        f"{type_of(media['schema'], page)} as `{kind}`" if "schema" in media else f"`{kind}`"
        for kind, media in content.items()
    )


def render_operations(document: dict[str, Any]) -> str:
    lines = [
        "# Endpoints",
        "",
        "Generated from the service's OpenAPI document (`/v1/openapi.json`, "
        f"[a copy](openapi.json)) at every build of this site: what the code "
        f"declares, nothing written by hand. Version {document['info']['version']}.",
        "The guides say what these are for; [Authentication](authentication.md), "
        "[Errors](errors.md) and [Rate limits](rate-limits.md) hold for every one.",
        "",
    ]
    current = None
    for tag, method, path, operation in _operations(document):
        if tag != current:
            lines += [f"## {tag}", ""]
            current = tag
        title = f"`{method.upper()} {path}`"
        lines += [f"### {title} {{#{_anchor(method, path)}}}", ""]
        lines += [f"**{operation.get('summary', '')}**", ""]
        scopes = [
            scope
            for requirement in operation.get("security", [])
            for scope in requirement.get("HTTPBearer", [])
        ]
        if operation.get("security"):
            needs = ", ".join(f"`{s}`" for s in scopes) if scopes else "any valid key"
            lines += [f"API key: {needs}.", ""]
        elif path.startswith("/v1/"):
            lines += ["No API key.", ""]
        if operation.get("description"):
            lines += [operation["description"].strip(), ""]
        parameters = operation.get("parameters", [])
        if parameters:
            lines += ["| parameter | in | type | required | |", "|---|---|---|---|---|"]
            for parameter in parameters:
                schema = parameter.get("schema", {})
                about = " ".join(
                    part for part in (parameter.get("description", ""), _bounds(schema)) if part
                )
                lines.append(
                    f"| `{parameter['name']}` | {parameter['in']} | "
                    f"{_cell(type_of(schema, API))} | "
                    f"{'yes' if parameter.get('required') else 'no'} | {_cell(about)} |"
                )
            lines.append("")
        body = operation.get("requestBody")
        if body:
            lines += [f"Body: {_body_schema(body.get('content', {}), API)}.", ""]
        responses = operation.get("responses", {})
        if responses:
            lines += ["| status | | body |", "|---|---|---|"]
            for status, response in responses.items():
                content = _body_schema(response.get("content", {}), API)
                lines.append(
                    f"| {status} | {_cell(response.get('description', ''))} | {_cell(content)} |"
                )
            lines.append("")
    return "\n".join(lines)


def render_events(document: dict[str, Any]) -> str:
    lines = [
        "# Events",
        "",
        "The event catalogue, generated from the `webhooks` of the service's "
        "OpenAPI document at every build of this site. Each type is what a "
        "[webhook](../guides/webhooks.md) delivery carries as its body, and what "
        "[`GET /v1/events`](api.md#get-v1-events) lists; "
        "[Events](../concepts/events.md) says when each is written.",
        "",
        "| type | | payload |",
        "|---|---|---|",
    ]
    webhooks = document.get("webhooks", {})
    for name, item in webhooks.items():
        operation = item["post"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        lines.append(
            f"| [`{name}`](#{name.replace('.', '').replace('_', '')}) | "
            f"{_cell(operation.get('description', ''))} | {type_of(schema, EVENTS)} |"
        )
    lines.append("")
    for name, item in webhooks.items():
        operation = item["post"]
        anchor = name.replace(".", "").replace("_", "")
        lines += [f"## `{name}` {{#{anchor}}}", "", operation.get("description", ""), ""]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        payload = document["components"]["schemas"][_ref_name(schema["$ref"])]
        lines += _properties(payload, EVENTS)
        lines += ["Headers of each delivery:", ""]
        lines += ["| header | |", "|---|---|"]
        for parameter in operation.get("parameters", []):
            lines.append(f"| `{parameter['name']}` | {_cell(parameter.get('description', ''))} |")
        lines += ["", "What the receiver's answer does:", "", "| answer | |", "|---|---|"]
        for status, response in operation.get("responses", {}).items():
            lines.append(f"| {status} | {_cell(response.get('description', ''))} |")
        lines.append("")
    return "\n".join(lines)


def _properties(schema: dict[str, Any], page: str) -> list[str]:
    properties = schema.get("properties", {})
    if not properties:
        return [f"Type: {type_of(schema, page)}.", ""] if "type" in schema else []
    required = set(schema.get("required", []))
    lines = ["| field | type | required | |", "|---|---|---|---|"]
    for name, field in properties.items():
        about = " ".join(part for part in (_description(field), _bounds(field)) if part)
        lines.append(
            f"| `{name}` | {_cell(type_of(field, page))} | "
            f"{'yes' if name in required else 'no'} | {_cell(about)} |"
        )
    return [*lines, ""]


def render_schemas(document: dict[str, Any]) -> str:
    lines = [
        "# Schemas",
        "",
        "Every schema the [endpoints](api.md) and [events](events.md) name, "
        "generated from the service's OpenAPI document at every build of this site.",
        "",
    ]
    for name, schema in sorted(document["components"]["schemas"].items()):
        lines += [f"## `{name}` {{#{name.lower()}}}", ""]
        if schema.get("description"):
            lines += [schema["description"].strip(), ""]
        if "properties" not in schema and any(k in schema for k in ("oneOf", "anyOf")):
            lines += [f"One of: {type_of(schema, SCHEMAS)}.", ""]
        else:
            lines += _properties(schema, SCHEMAS)
    return "\n".join(lines)
