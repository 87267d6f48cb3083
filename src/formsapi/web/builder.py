"""The form builder: a form's draft, block by block, its review and
publishing, and its versions. Every save goes through form.draft, which
checks the whole form as the API does; publishing goes through the
service PATCH /v1/forms/{id} uses.

Every page works without script: each action is a small form of its own,
so the keyboard reaches all of them. The editor of one block is made from
the block type's own model (its fields, their kinds and limits), so a new
setting of a block type shows up here without a template of its own."""

import re
import typing
from dataclasses import dataclass
from functools import cache, partial
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Form, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.dependencies import check_json
from formsapi.errors import BadRequest, MalformedJSON, ValidationFailed
from formsapi.form import draft as drafts
from formsapi.form import service as form_service
from formsapi.form.work import worked_out
from formsapi.hosted import routes as hosted
from formsapi.kit.schemas import CleanStr
from formsapi.language.blocks import Block, BlockList
from formsapi.language.compiled import Compiled
from formsapi.language.definition import DEFAULT_LANGUAGE, Definition
from formsapi.language.translation import LANGUAGE_PATTERN, LISTS, TEXTS, name_of
from formsapi.models import Form as FormRow
from formsapi.services import services
from formsapi.web.context import SECURITY_HEADERS, DbDep, PathId, ReadDep, back_with, render
from formsapi.web.forms import (
    MAX_JSON,
    PAGE,
    SECTION,
    OrganizationDep,
    may_edit,
    pointer_path,
    where,
)
from formsapi.web.pages import Managed, PageRoute, keep

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

# Every block type's model, by its `type`, in the order the API lists them.
MODELS: dict[str, type[BaseModel]] = {
    typing.get_args(model.model_fields["type"].annotation)[0]: model
    for model in typing.get_args(typing.get_args(Block)[0])
}
TYPE_NAMES = {name: name.replace("_", " ").capitalize() for name in MODELS}
TYPE_NAMES.update(nps="NPS (0-10)", yes_no="Yes / no", url="URL", date_time="Date and time")
# Settings whose text is long: a text area, not a line.
LONG_TEXT = ("description", "text", "patternMessage")
# Shown on the condition's own part of the page, not among the settings.
CONDITIONS = ("visibleIf", "requiredIf")
LABELS = {
    "key": "Answer key",
    "visibleIf": "Show only when",
    "requiredIf": "Required when",
    "prefill": "May be prefilled from the link (?key=...)",
    "allowOther": "Offer “Other” with a text box",
    "patternMessage": "Message when the pattern does not match",
}


@dataclass(frozen=True)
class Setting:
    """One field of a block's editor: its name in the API, how it is asked."""

    name: str
    label: str
    kind: str  # text, long, check, number, choice, options, list, rule
    required: bool
    choices: tuple[str, ...] = ()
    help: str = ""


def _kind(schema: dict[str, Any], name: str) -> tuple[str, tuple[str, ...]]:
    branches = [
        leaf
        for branch in schema.get("anyOf", [schema])
        for leaf in branch.get("anyOf", [branch])
        if leaf.get("type") != "null"
    ]
    first = branches[0] if branches else {}
    if "enum" in first:
        return "choice", tuple(first["enum"])
    if name in CONDITIONS:
        return "rule", ()
    kind = first.get("type")
    if kind == "boolean":
        return "check", ()
    if kind in ("integer", "number") or {"integer", "number"} & {b.get("type") for b in branches}:
        return "number", ()
    if kind == "array":
        items = first.get("items", {})
        return ("options" if "$ref" in items else "list"), ()
    return ("long" if name in LONG_TEXT else "text"), ()


@cache
def settings_of(block_type: str) -> tuple[Setting, ...]:
    """The editor's fields for a block type, from its model's JSON Schema
    (a millisecond to make: made once a type)."""
    schema = MODELS[block_type].model_json_schema(by_alias=True)
    required = set(schema.get("required", []))
    found = []
    for name, field_schema in schema["properties"].items():
        if name == "type":
            continue
        kind, choices = _kind(field_schema, name)
        label = LABELS.get(name) or re.sub(r"(?<!^)([A-Z])", r" \1", name).capitalize()
        found.append(
            Setting(
                name, label, kind, name in required, choices, field_schema.get("description", "")
            )
        )
    return tuple(found)


def _options_text(items: list[dict[str, Any]]) -> str:
    """Options (or a matrix's rows and columns) one a line: `value | label`."""
    return "\n".join(f"{item['value']} | {item['label']}" for item in items)


def _options(text: str) -> list[dict[str, str]]:
    """Lines `value | label`; a line of a label alone gets a value made from it."""
    items = []
    for line in text.splitlines():
        if not line.strip():
            continue
        value, bar, label = line.partition("|")
        if not bar:
            label = value
            value = re.sub(r"[^a-z0-9]+", "_", value.strip().lower()).strip("_") or "option"
        items.append({"value": value.strip(), "label": label.strip()})
    return items


def shown(block: dict[str, Any], setting: Setting) -> str:
    """A setting's value as its field shows it."""
    value = block.get(setting.name)
    if value is None:
        return ""
    if setting.kind == "options":
        return _options_text(value)
    if setting.kind == "list":
        return ", ".join(map(str, value))
    if setting.kind == "rule":
        return orjson.dumps(value).decode()
    return str(value)


def _read(block: dict[str, Any], settings: tuple[Setting, ...], posted: Any) -> dict[str, Any]:
    """The block with its settings as posted; a blank optional one left out."""
    changed: dict[str, Any] = {"type": block["type"]}
    for setting in settings:
        raw = posted.get(setting.name)
        if setting.kind == "check":
            if raw is not None or setting.required:
                changed[setting.name] = raw is not None
            continue
        if not isinstance(raw, str):
            raw = ""
        if setting.kind == "rule":
            continue  # the condition's own form
        if not raw.strip() and not setting.required:
            continue
        if setting.kind == "number":
            changed[setting.name] = _number(raw)
        elif setting.kind == "options":
            changed[setting.name] = _options(raw)
        elif setting.kind == "list":
            changed[setting.name] = [part.strip() for part in raw.split(",") if part.strip()]
        else:
            changed[setting.name] = raw.strip() if setting.kind == "text" else raw
    for name in CONDITIONS:  # kept as they were
        if name in block:
            changed[name] = block[name]
    return changed


def _number(raw: str) -> int | float | str:
    try:
        number = float(raw)
    except ValueError:
        return raw  # refused by the model, with its message
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


# What a condition may test, by the kind of question it is about.
COMPARE = {"==": "is", "!=": "is not"}
ORDER = {
    "==": "is",
    "!=": "is not",
    "<": "is under",
    "<=": "is at most",
    ">": "is over",
    ">=": "is at least",
}
NUMERIC_TYPES = ("number", "rating", "nps", "scale")
CHOICE_TYPES = ("single_choice", "dropdown", "yes_no")
LISTED_TYPES = ("multiple_choice", "ranking")


def operators_for(block: dict[str, Any]) -> dict[str, str]:
    kind = block.get("type")
    if kind in NUMERIC_TYPES or kind in ("date", "time", "date_time"):
        return {**ORDER, "filled": "is answered", "empty": "is not answered"}
    if kind in LISTED_TYPES:
        return {"in": "includes", "not in": "does not include", "filled": "is answered"}
    return {**COMPARE, "filled": "is answered", "empty": "is not answered"}


def condition(key: str, operator: str, value: Any) -> Any:
    """The JSON Logic of a condition made on the page."""
    var = {"var": key}
    if operator == "filled":
        return {"!!": [var]}
    if operator == "empty":
        return {"!": [var]}
    if operator == "in":
        return {"in": [value, var]}
    if operator == "not in":
        return {"!": [{"in": [value, var]}]}
    return {operator: [var, value]}


@dataclass(frozen=True, slots=True)
class Made:
    """A condition as the page's fields make it: a question, a test, a value."""

    question: str
    operator: str
    value: Any = ""


def made(rule: Any) -> Made | None:
    """The fields that make `rule` (`condition` read backwards), or None for a
    rule they cannot make, which is shown and edited as JSON Logic."""

    def key_of(operand: Any) -> str | None:
        if isinstance(operand, dict) and list(operand) == ["var"]:
            key = operand["var"]
            return key if isinstance(key, str) else None
        return None

    if not isinstance(rule, dict) or len(rule) != 1:
        return None
    [(operator, operands)] = rule.items()
    if not isinstance(operands, list):
        return None
    if len(operands) == 1 and operator in ("!!", "!"):
        if (key := key_of(operands[0])) is not None:
            return Made(key, "filled" if operator == "!!" else "empty")
        inner = made(operands[0]) if operator == "!" else None
        if inner is not None and inner.operator == "in":
            return Made(inner.question, "not in", inner.value)
        return None
    if len(operands) != 2:
        return None
    value, operand = operands if operator == "in" else operands[::-1]
    key = key_of(operand)
    plain = isinstance(value, str | int | float) and not isinstance(value, bool)
    if key is None or not plain or (operator != "in" and operator not in ORDER):
        return None
    return Made(key, operator, value)


def said(found: Made | None, earlier: list[dict[str, Any]]) -> str | None:
    """A condition the page's fields make (`made`) in words (“Plan” is Team),
    if they offer its test for its question."""
    question = next((q for q in earlier if q["key"] == found.question), None) if found else None
    if found is None or question is None:
        return None
    words = operators_for(question).get(found.operator)
    if words is None:
        return None
    parts = [f"\u201c{question.get('title') or found.question}\u201d", words]
    if found.operator not in ("filled", "empty"):
        labels = {o.get("value"): o.get("label") for o in question.get("options", [])}
        parts.append(labels.get(found.value) or found.value)
    return " ".join(map(str, parts))


def _typed(block: dict[str, Any], text: str) -> Any:
    """A condition's value as the question's answers are: a number for a
    numeric question, else the text (an option's value for a choice)."""
    if block.get("type") in NUMERIC_TYPES:
        return _number(text)
    return text


def _earlier_questions(blocks: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [b for b in blocks[:index] if b.get("type") not in drafts.LAYOUT and "key" in b]


async def _draft(session: AsyncSession, managed: Managed, form_id: str) -> drafts.Draft:
    return await drafts.get(session, managed.organization.id, form_id)


async def _save(
    request: Request,
    session: AsyncSession,
    managed: Managed,
    form_id: str,
    revision: str,
    document: dict[str, Any],
    summary: str,
) -> drafts.Draft:
    """Save the draft, with a refusal's problems (each at the block it
    concerns) or a late save's changes kept for the page."""
    try:
        # Checked where a costly form's work is (form/work.py), its size its cost.
        size = len(orjson.dumps(document))
        organization_id = managed.organization.id
        await services(request).form_saves.take(organization_id, size)
        fair = services(request).fair_share
        checked = await worked_out(
            fair, organization_id, size, partial(drafts.normalized, document)
        )
        return await drafts.save(
            session,
            organization_id,
            form_id,
            revision,
            document,
            user_id=managed.viewer.user.id,
            summary=summary,
            checked=checked,
        )
    except drafts.DraftChanged as error:
        keep(request, changes=[change.text for change in error.changes])
        raise
    except ValidationError as error:
        placed = [(list(e["loc"]), str(e["msg"])) for e in error.errors()]
        raise _refused(request, document, placed) from None
    except ValidationFailed as error:
        placed = [
            (pointer_path(document, problem["pointer"]), problem["detail"])
            for problem in error.extensions["errors"]
        ]
        raise _refused(request, document, placed) from None


async def _save_blocks(
    request: Request,
    session: AsyncSession,
    managed: Managed,
    draft: drafts.Draft,
    revision: str,
    blocks: list[dict[str, Any]],
    summary: str,
) -> drafts.Draft:
    """The draft with these blocks, the rest of it as it was."""
    document = {**draft.document, "blocks": blocks}
    return await _save(request, session, managed, draft.form.id, revision, document, summary)


def _refused(request: Request, document: Any, placed: list[tuple[list[Any], str]]) -> BadRequest:
    problems = [{"where": where(document, path), "detail": detail} for path, detail in placed]
    keep(request, problems=problems[:50])
    return BadRequest("Not saved: the form would not be valid. What is wrong is listed below.")


def _builder(form_id: str) -> str:
    return f"{PAGE}/{form_id}/edit"


@router.get("/{form_id}/edit")
async def builder_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    draft = await _draft(session, managed, form_id)
    return render(
        request,
        "builder/blocks.html",
        managed.viewer,
        section=SECTION.name,
        form=draft.form,
        draft=draft,
        blocks=draft.document["blocks"],
        types=TYPE_NAMES,
        layout=drafts.LAYOUT,
        late=managed.viewer.flash.get("changes", []),
        problems=managed.viewer.flash.get("problems", []),
    )


# The draft as the page showed it (Draft.token); any other text is a page
# out of date, and refused as one.
Revision = Annotated[str, Form(max_length=30)]
BlockIndex = Annotated[int, PathParam(ge=0, le=drafts.MAX_BLOCKS)]
VersionNumber = Annotated[int, PathParam(ge=1, le=2**31 - 1)]


def _new_block(block_type: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    if block_type in ("heading", "paragraph"):
        return {"type": block_type, "text": "New " + block_type}
    if block_type == "page_break":
        return {"type": "page_break"}
    block: dict[str, Any] = {
        "type": block_type,
        "key": _free_key(block_type, blocks),
        "title": f"New {TYPE_NAMES[block_type].lower()} question",
    }
    if block_type in ("single_choice", "multiple_choice", "dropdown", "ranking"):
        block["options"] = [
            {"value": "option_1", "label": "Option 1"},
            {"value": "option_2", "label": "Option 2"},
        ]
    if block_type == "matrix":
        block["rows"] = [{"value": "row_1", "label": "Row 1"}]
        block["columns"] = [
            {"value": "good", "label": "Good"},
            {"value": "bad", "label": "Bad"},
        ]
    return block


def _free_key(stem: str, blocks: list[dict[str, Any]]) -> str:
    taken = {block.get("key") for block in blocks}
    stem = stem[:56]
    if stem not in taken:
        return stem
    return next(f"{stem}_{n}" for n in range(2, len(blocks) + 3) if f"{stem}_{n}" not in taken)


@router.post("/{form_id}/edit/add")
async def add_block(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    revision: Revision,
    block_type: Annotated[str, Form(alias="type", max_length=40)] = "",
    position: Annotated[int, Form(ge=-1, le=drafts.MAX_BLOCKS)] = -1,
) -> Response:
    """A new block of the type chosen, at the end or after the block chosen."""
    may_edit(managed)
    if block_type not in MODELS:
        raise BadRequest("Choose the kind of block to add.")
    draft = await _draft(session, managed, form_id)
    blocks = list(draft.document["blocks"])
    if len(blocks) >= drafts.MAX_BLOCKS:
        raise BadRequest(f"A form holds at most {drafts.MAX_BLOCKS} blocks.")
    at = len(blocks) if position < 0 or position >= len(blocks) else position + 1
    block = _new_block(block_type, blocks)
    blocks.insert(at, block)
    await _save_blocks(request, session, managed, draft, revision, blocks, f"Added a {block_type}")
    return await back_with(
        session,
        managed.viewer,
        f"{_builder(form_id)}/blocks/{at}",
        notice=f"Block {at + 1} added: give it its text and settings.",
    )


@router.post("/{form_id}/edit/blocks/{index}/{action}")
async def block_action(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    index: BlockIndex,
    action: str,
    revision: Revision,
) -> Response:
    """Move a block up or down, duplicate it or remove it."""
    may_edit(managed)
    draft = await _draft(session, managed, form_id)
    blocks = list(draft.document["blocks"])
    if not 0 <= index < len(blocks) or action not in ("up", "down", "duplicate", "remove"):
        raise BadRequest("That block is no longer there: the page was out of date.")
    block = blocks[index]
    label = drafts.label(block)
    focus = index
    if action in ("up", "down"):
        to = index - 1 if action == "up" else index + 1
        if not 0 <= to < len(blocks):
            raise BadRequest(f"{label} is already {'first' if to < 0 else 'last'}.")
        blocks[index], blocks[to] = blocks[to], blocks[index]
        focus, notice = to, f"{label} moved to position {to + 1}."
    elif action == "duplicate":
        copy = dict(block)
        if "key" in copy and isinstance(copy["key"], str):
            copy["key"] = _free_key(f"{copy['key'][:50]}_copy", blocks)
        blocks.insert(index + 1, copy)
        focus, notice = index + 1, f"{label} duplicated as block {index + 2}."
    else:
        del blocks[index]
        focus, notice = min(index, len(blocks) - 1), f"{label} removed."
    await _save_blocks(request, session, managed, draft, revision, blocks, notice)
    return await back_with(
        session, managed.viewer, f"{_builder(form_id)}#block-{max(focus, 0)}", notice=notice
    )


@router.post("/{form_id}/edit/order")
async def reorder(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    revision: Revision,
    order: Annotated[str, Form(max_length=4 * drafts.MAX_BLOCKS)] = "",
) -> Response:
    """The blocks in a new order (the page's drag and drop): their indexes,
    comma-separated, each once."""
    may_edit(managed)
    draft = await _draft(session, managed, form_id)
    blocks = draft.document["blocks"]
    try:
        indexes = [int(part) for part in order.split(",")] if order else []
    except ValueError:
        indexes = []
    if sorted(indexes) != list(range(len(blocks))):
        raise BadRequest("The new order does not list every block once: the page was out of date.")
    ordered = [blocks[i] for i in indexes]
    await _save_blocks(request, session, managed, draft, revision, ordered, "Reordered the blocks")
    return await back_with(session, managed.viewer, _builder(form_id), notice="Blocks reordered.")


def _block_at(draft: drafts.Draft, index: int) -> dict[str, Any]:
    blocks = draft.document["blocks"]
    if not 0 <= index < len(blocks):
        raise BadRequest(f"The draft has no block {index + 1}.")
    block: dict[str, Any] = blocks[index]
    return block


@router.get("/{form_id}/edit/blocks/{index}")
async def block_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId, index: BlockIndex
) -> Response:
    draft = await _draft(session, managed, form_id)
    blocks = draft.document["blocks"]
    if not 0 <= index < len(blocks):
        return await builder_page(request, session, managed, form_id)
    block = blocks[index]
    earlier = _earlier_questions(blocks, index)
    return render(
        request,
        "builder/block.html",
        managed.viewer,
        section=SECTION.name,
        form=draft.form,
        draft=draft,
        index=index,
        block=block,
        type_name=TYPE_NAMES[block["type"]],
        settings=[s for s in settings_of(block["type"]) if s.kind != "rule"],
        conditions=[s for s in settings_of(block["type"]) if s.kind == "rule"],
        shown=shown,
        made=made,
        said=said,
        earlier=earlier,
        operators={q["key"]: operators_for(q) for q in earlier},
        recall=[q["key"] for q in earlier],
        json_text=orjson.dumps(block, option=orjson.OPT_INDENT_2).decode(),
        problems=managed.viewer.flash.get("problems", []),
        late=managed.viewer.flash.get("changes", []),
    )


@router.post("/{form_id}/edit/blocks/{index}")
async def save_block(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    index: BlockIndex,
    revision: Revision,
) -> Response:
    """The block's settings as posted, checked with the whole form."""
    may_edit(managed)
    draft = await _draft(session, managed, form_id)
    block = _block_at(draft, index)
    posted = await request.form()
    changed = _read(block, settings_of(block["type"]), posted)
    blocks = list(draft.document["blocks"])
    blocks[index] = changed
    summary = f"Changed {drafts.label(changed)}"
    await _save_blocks(request, session, managed, draft, revision, blocks, summary)
    return await back_with(
        session, managed.viewer, f"{_builder(form_id)}/blocks/{index}", notice="Saved."
    )


@router.post("/{form_id}/edit/blocks/{index}/condition/{name}")
async def save_condition(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    index: BlockIndex,
    name: str,
    revision: Revision,
    question: Annotated[str, Form(max_length=100)] = "",
    operator: Annotated[str, Form(max_length=10)] = "",
    value: Annotated[CleanStr, Form(max_length=500)] = "",
    rule: Annotated[str, Form(max_length=100_000)] = "",
    how: Annotated[str, Form(max_length=10)] = "made",
) -> Response:
    """A block's condition (`visibleIf`, `requiredIf`): made from a question,
    an operator and a value offered for that question, written as JSON
    Logic, or cleared."""
    may_edit(managed)
    if name not in CONDITIONS:
        raise BadRequest("No such condition.")
    draft = await _draft(session, managed, form_id)
    block = dict(_block_at(draft, index))
    blocks = list(draft.document["blocks"])
    if how == "clear":
        block.pop(name, None)
    elif how == "json":
        try:
            block[name] = check_json(rule.encode())
        except MalformedJSON as error:
            raise BadRequest(f"The rule's JSON: {error.detail}") from None
    else:
        asked = {q["key"]: q for q in _earlier_questions(blocks, index)}
        if question not in asked or operator not in operators_for(asked[question]):
            raise BadRequest("Choose a question before this block, and what to test of it.")
        if operator not in ("filled", "empty") and not value.strip():
            raise BadRequest("Give the value to compare the answer with.")
        block[name] = condition(question, operator, _typed(asked[question], value.strip()))
    blocks[index] = block
    summary = f"Set when {drafts.label(block)} shows"
    await _save_blocks(request, session, managed, draft, revision, blocks, summary)
    return await back_with(
        session, managed.viewer, f"{_builder(form_id)}/blocks/{index}", notice="Condition saved."
    )


def _compiled(draft: drafts.Draft) -> tuple[FormRow, Compiled]:
    """The draft as the hosted page would run it: a form not stored, at the
    version publishing would make."""
    document = draft.document
    form = FormRow(
        id=draft.form.id, organization_id=draft.form.organization_id, title=document["title"]
    )
    definition = {name: document[name] for name in drafts.DEFINITION_PARTS if name in document}
    version = Compiled(
        draft.form.version + 1,
        BlockList.validate_python(document["blocks"]),
        Definition.model_validate(definition),
    )
    return form, version


@router.api_route("/{form_id}/preview", methods=["GET", "POST"])
async def preview(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    """The draft on the hosted page, logic and pages included, storing
    nothing: for anyone who may read the form."""
    draft = await _draft(session, managed, form_id)
    await session.close()
    form, version = _compiled(draft)
    posted = await request.form() if request.method == "POST" else None
    fields = {"csrf_token": managed.viewer.csrf_token}
    response = await hosted.preview(
        request, form, version, f"{PAGE}/{form_id}/preview", posted, fields
    )
    response.headers.update(SECURITY_HEADERS)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/{form_id}/edit/json")
async def json_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    draft = await _draft(session, managed, form_id)
    flash = managed.viewer.flash
    return render(
        request,
        "builder/json.html",
        managed.viewer,
        section=SECTION.name,
        form=draft.form,
        draft=draft,
        json_text=flash.get("json")
        or orjson.dumps(draft.document, option=orjson.OPT_INDENT_2).decode(),
        problems=flash.get("problems", []),
        late=flash.get("changes", []),
    )


@router.post("/{form_id}/edit/json")
async def save_json(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    revision: Revision,
    json_text: Annotated[str, Form(alias="json")] = "",
) -> Response:
    """The whole draft as JSON: the API's format, for what the block editor
    does not show (hidden fields, variables, rules, endings, translations)."""
    may_edit(managed)
    if len(json_text) > MAX_JSON:
        raise BadRequest(f"The JSON is over {MAX_JSON:,} characters.")
    keep(request, json=json_text if len(json_text) <= 100_000 else "")
    try:
        document = check_json(json_text.encode())
    except MalformedJSON as error:
        raise BadRequest(error.detail) from None
    if not isinstance(document, dict):
        raise BadRequest("The JSON must be an object: the form, as POST /v1/forms takes it.")
    document.pop("slug", None)
    await _save(request, session, managed, form_id, revision, document, "Edited the JSON")
    return await back_with(session, managed.viewer, _builder(form_id), notice="Draft saved.")


@dataclass(frozen=True)
class Text:
    """One text of the form a translation may give: where it is, the form's
    own words, and its place in a translation (`Translation`'s fields)."""

    where: str
    own: str
    path: tuple[str, ...]


def texts_of(document: dict[str, Any]) -> list[Text]:
    """Every text of the draft a translation may give, in form order."""
    found = [Text("Title", document["title"], ("title",))]
    for position, block in enumerate(document["blocks"]):
        name = name_of(block, position)
        label = f"Block {position + 1}"
        for field_name in TEXTS:
            if block.get(field_name):
                words = re.sub(r"(?<!^)([A-Z])", r" \1", field_name).lower()
                found.append(
                    Text(f"{label}, {words}", block[field_name], ("blocks", name, field_name))
                )
        for listed in LISTS:
            for item in block.get(listed) or []:
                found.append(
                    Text(
                        f"{label}, {listed[:-1]} “{item['value']}”",
                        item["label"],
                        ("blocks", name, listed, item["value"]),
                    )
                )
    for ending in document.get("endings", []):
        for field_name in ("title", "text"):
            if ending.get(field_name):
                found.append(
                    Text(
                        f"Ending “{ending['key']}”, {field_name}",
                        ending[field_name],
                        ("endings", ending["key"], field_name),
                    )
                )
    return found


def _given(translation: dict[str, Any], path: tuple[str, ...]) -> str:
    node: Any = translation
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, str) else ""


def _put(translation: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    node = translation
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


@router.get("/{form_id}/edit/translations")
async def translations_page(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    form_id: PathId,
    lang: Annotated[str, Query(max_length=35)] = "",
) -> Response:
    """The draft's texts beside a language's, with what is missing marked."""
    draft = await _draft(session, managed, form_id)
    document = draft.document
    translations: dict[str, Any] = document.get("translations") or {}
    chosen = lang if lang in translations else next(iter(translations), "")
    given = translations.get(chosen, {})
    rows = [(text, _given(given, text.path)) for text in texts_of(document)]
    return render(
        request,
        "builder/translations.html",
        managed.viewer,
        section=SECTION.name,
        form=draft.form,
        draft=draft,
        own=document.get("language") or DEFAULT_LANGUAGE,
        languages=list(translations),
        chosen=chosen,
        rows=rows,
        missing=sum(1 for _, said in rows if not said),
        problems=managed.viewer.flash.get("problems", []),
        late=managed.viewer.flash.get("changes", []),
    )


@router.post("/{form_id}/edit/translations")
async def save_translation(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    revision: Revision,
    lang: Annotated[str, Form(max_length=35)] = "",
    how: Annotated[str, Form(max_length=10)] = "save",
) -> Response:
    """A language's texts as posted (field `t<N>`: the N-th of texts_of;
    blank: left in the form's own language), a language added, or removed."""
    may_edit(managed)
    if not re.fullmatch(LANGUAGE_PATTERN, lang):
        raise BadRequest("Give a language tag, such as fr, de or pt-BR.")
    draft = await _draft(session, managed, form_id)
    document = dict(draft.document)
    translations = dict(document.get("translations") or {})
    if how == "remove":
        translations.pop(lang, None)
        summary = f"Removed the {lang} translation"
    else:
        posted = await request.form()
        kept = translations.get(lang, {})
        translation: dict[str, Any] = {"messages": kept["messages"]} if "messages" in kept else {}
        for number, text in enumerate(texts_of(document)):
            value = posted.get(f"t{number}")
            if isinstance(value, str) and value.strip():
                _put(translation, text.path, value.strip())
        translations[lang] = translation
        summary = f"Translated into {lang}"
    document["translations"] = translations
    await _save(request, session, managed, form_id, revision, document, summary)
    target = f"{_builder(form_id)}/translations" + (f"?lang={lang}" if how != "remove" else "")
    return await back_with(session, managed.viewer, target, notice="Translation saved.")


@router.get("/{form_id}/publish")
async def publish_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    draft = await _draft(session, managed, form_id)
    form = draft.form
    changes = drafts.compare(
        form_service.exported(form), draft.document, answered=form.response_count
    )
    return render(
        request,
        "builder/publish.html",
        managed.viewer,
        section=SECTION.name,
        form=form,
        draft=draft,
        changes=changes,
        warnings=[c.warning for c in changes if c.warning],
        late=managed.viewer.flash.get("changes", []),
        moved_on=draft.unpublished and draft.base_version != form.version,
    )


@router.post("/{form_id}/publish")
async def publish(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    revision: Revision,
    version: Annotated[int, Form(ge=1, le=2**31 - 1)],
) -> Response:
    may_edit(managed)
    form = (await _draft(session, managed, form_id)).form
    try:
        published = await drafts.publish(
            session,
            managed.organization.id,
            form_id,
            revision,
            version,
            make_public=form.status == "draft",
        )
    except drafts.DraftChanged as error:
        keep(request, changes=[change.text for change in error.changes])
        raise
    return await back_with(
        session,
        managed.viewer,
        f"{PAGE}/{form_id}",
        notice=f"Version {published.version} of “{published.title}” is published.",
    )


@router.get("/{form_id}/versions")
async def versions_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    draft = await _draft(session, managed, form_id)
    found = await drafts.versions(session, managed.organization.id, form_id)
    return render(
        request,
        "builder/versions.html",
        managed.viewer,
        section=SECTION.name,
        form=draft.form,
        draft=draft,
        versions=found,
        late=managed.viewer.flash.get("changes", []),
    )


@router.get("/{form_id}/versions/{version}")
async def version_page(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    form_id: PathId,
    version: VersionNumber,
) -> Response:
    draft = await _draft(session, managed, form_id)
    form, found = await drafts.version_document(session, managed.organization.id, form_id, version)
    document = form_service.exported(found)
    return render(
        request,
        "builder/version.html",
        managed.viewer,
        section=SECTION.name,
        form=form,
        draft=draft,
        version=found,
        changes=drafts.compare(document, form_service.exported(form)),
        json_text=orjson.dumps(document, option=orjson.OPT_INDENT_2).decode(),
    )


@router.post("/{form_id}/versions/{version}/restore")
async def restore(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    version: VersionNumber,
    revision: Revision,
) -> Response:
    """An earlier version as the draft, to publish again as the next one."""
    may_edit(managed)
    _, found = await drafts.version_document(session, managed.organization.id, form_id, version)
    document = form_service.exported(found)
    await _save(
        request, session, managed, form_id, revision, document, f"Restored version {version}"
    )
    return await back_with(
        session,
        managed.viewer,
        _builder(form_id),
        notice=f"Version {version} is the draft now: review it, then publish it as the next.",
    )
