"""The JSON Schema (draft 2020-12) of a form's answers, logic included
where JSON Schema can say it.

A question's `visibleIf` and `requiredIf` become `if`/`then`/`else` when
their rule is a comparison of an always-asked question's answer with a
literal (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in`), or `and`/`or`/`!` of such
comparisons. Everything else (jumps, pages shown by a rule, variables,
rules comparing answers with each other or computing) cannot be said in
JSON Schema: it is listed under `x-logic`, and the questions it touches are
left optional there. The server enforces all of it either way; a schema
without `x-logic` accepts exactly what the server accepts.
"""

from typing import Any

from formsapi.language import logic
from formsapi.language.blocks import (
    JSON_SCHEMA_DIALECT,
    LISTED,
    NUMERIC,
    Block,
    Matrix,
    PageBreak,
    ecma_escape,
    questions,
)
from formsapi.language.blocks import answers_schema as blocks_schema
from formsapi.language.definition import HIDDEN_VALUE_MAX, Definition, JumpAction, Layout

Schema = dict[str, Any]
_ORDER = {"<": "exclusiveMaximum", "<=": "maximum", ">": "exclusiveMinimum", ">=": "minimum"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def answers_schema(
    blocks: list[Block],
    definition: Definition,
    *,
    title: str | None = None,
    layout: Layout | None = None,
) -> Schema:
    schema = blocks_schema(blocks, title=title)
    if not _has_logic(blocks, definition):
        return schema
    layout = layout or Layout(blocks, definition)
    properties: Schema = schema["properties"]
    for hidden in definition.hidden_fields:
        properties[hidden.key] = {
            "type": "string",
            "maxLength": HIDDEN_VALUE_MAX,
            "description": "A hidden field: filled from the form's link.",
        }
    for variable in definition.variables:
        properties[f"vars.{variable.name}"] = {
            "type": "number" if variable.type == "number" else "string",
            "readOnly": True,
            "description": "Computed by the server; a post must leave it out.",
        }
    fixed = _always_asked(layout)
    translator = _Translator(layout, fixed)
    conditions: list[Schema] = []
    unsaid: dict[str, Any] = {}
    required: list[str] = []
    for question in questions(blocks):
        key = question.key
        visible = question.visible_if
        needed: Any = True if question.required else question.required_if
        if key not in fixed:
            unsaid[key] = {"reason": "asked on a page that logic may skip"}
            continue
        if isinstance(question, Matrix):  # its rows: required as a whole, or in x-logic
            if visible is None and needed in (None, True, False):
                required += [row for row, _ in question.parts()] if needed else []
            else:
                unsaid[key] = {"reason": "a matrix shown or required by a rule"}
            continue
        if visible is None and needed is True:
            required.append(key)
            continue
        shown = translator.schema(visible) if visible is not None else None
        need = translator.schema(needed) if needed not in (None, True, False) else None
        if (visible is not None and shown is None) or (
            needed not in (None, True, False) and need is None
        ):
            unsaid[key] = {
                name: rule
                for name, rule in (("visibleIf", visible), ("requiredIf", needed))
                if rule not in (None, True, False)
            }
            continue
        then: Schema = {}
        if needed is True:
            then = {"required": [key]}
        elif need is not None:
            then = {"if": need, "then": {"required": [key]}}
        if shown is None:
            conditions.append(then)
        else:
            conditions.append({"if": shown, "then": then, "else": {"properties": {key: False}}})
    schema["required"] = required
    if conditions:
        schema["allOf"] = conditions
    logic = {
        "questions": unsaid,
        "pages": {
            block.key or f"page {page}": block.visible_if
            for page, start in enumerate(layout.starts)
            if isinstance(block := layout.blocks[start], PageBreak) and block.visible_if is not None
        },
        "rules": definition.model_dump(by_alias=True)["logic"],
        "variables": definition.model_dump(by_alias=True, exclude_none=True)["variables"],
    }
    logic = {name: value for name, value in logic.items() if value}
    if logic:
        schema["x-logic"] = logic
    schema["$schema"] = JSON_SCHEMA_DIALECT
    return schema


def _has_logic(blocks: list[Block], definition: Definition) -> bool:
    return bool(
        definition.hidden_fields
        or definition.variables
        or definition.logic
        or any(
            getattr(block, "visible_if", None) is not None
            or getattr(block, "required_if", None) is not None
            for block in blocks
        )
    )


def _always_asked(layout: Layout) -> set[str]:
    """Questions on pages every respondent reaches: before any page a rule
    shows or a jump can skip."""
    jumps = [
        layout.page_of(layout.positions[action.after])
        for rule in layout.definition.logic
        for action in rule.then
        if isinstance(action, JumpAction) and action.after in layout.positions
    ]
    last = min(jumps, default=len(layout.starts) - 1)
    for page, start in enumerate(layout.starts):
        block = layout.blocks[start]
        if page and isinstance(block, PageBreak) and block.visible_if is not None:
            last = min(last, page - 1)
            break
    return {key for key, position in layout.positions.items() if layout.page_of(position) <= last}


class _Translator:
    """A rule as a JSON Schema condition over the answers, or None."""

    def __init__(self, layout: Layout, fixed: set[str]) -> None:
        self.layout = layout
        self.fixed = fixed

    def schema(self, rule: Any) -> Schema | None:
        if not isinstance(rule, dict) or len(rule) != 1:
            return None
        ((operator, raw),) = rule.items()
        args = raw if isinstance(raw, list) else [raw]
        if operator in ("and", "or"):
            parts = [self.schema(arg) for arg in args]
            if not parts or any(part is None for part in parts):
                return None
            return {"allOf" if operator == "and" else "anyOf": parts}
        if operator == "!" and len(args) == 1:
            inner = self.schema(args[0])
            return None if inner is None else {"not": inner}
        if operator in ("==", "!=") and len(args) == 2:
            return self._equal(args, negate=operator == "!=")
        if operator in _ORDER and len(args) == 2:
            return self._order(operator, args)
        if operator == "in" and len(args) == 2:
            return self._in(args)
        return None

    def _question(self, node: Any) -> Any:
        """The question a `{"var": key}` reads, if always asked."""
        if isinstance(node, dict) and set(node) == {"var"} and isinstance(node["var"], str):
            position = self.layout.positions.get(node["var"])
            block = None if position is None else self.layout.blocks[position]
            # A matrix's rows are not said in the schema: x-logic lists them.
            if node["var"] in self.fixed and not isinstance(block, Matrix):
                return block
        return None

    def _answered(self, key: str, schema: Schema) -> Schema:
        return {"properties": {key: schema}, "required": [key]}

    def _equal(self, args: list[Any], *, negate: bool) -> Schema | None:
        question, literal = self._question(args[0]), args[1]
        if question is None:
            question, literal = self._question(args[1]), args[0]
        if question is None or isinstance(question, LISTED):
            return None
        numeric = isinstance(question, NUMERIC)
        if isinstance(literal, bool) or not (
            (numeric and isinstance(literal, int | float))
            or (not numeric and isinstance(literal, str))
        ):
            return None
        equal = self._answered(question.key, {"const": literal})
        return {"not": equal} if negate else equal

    def _order(self, operator: str, args: list[Any]) -> Schema | None:
        question, literal = self._question(args[0]), args[1]
        if question is None:
            question, literal, operator = self._question(args[1]), args[0], _FLIPPED[operator]
        if (
            not isinstance(question, NUMERIC)
            or isinstance(literal, bool)
            or not isinstance(literal, int | float)
        ):
            return None
        answered = self._answered(question.key, {_ORDER[operator]: literal})
        # A missing answer is null, which JSON Logic compares as 0.
        if logic.truthy(logic.OPERATIONS[operator](0, literal)):
            return {"anyOf": [answered, {"not": {"required": [question.key]}}]}
        return answered

    def _in(self, args: list[Any]) -> Schema | None:
        needle, haystack = args
        question = self._question(needle)
        if question is not None and not isinstance(question, LISTED):
            if isinstance(haystack, list) and all(
                isinstance(v, str) and not isinstance(question, NUMERIC) for v in haystack
            ):
                return self._answered(question.key, {"enum": haystack})
            return None
        chosen = self._question(haystack)
        if isinstance(chosen, LISTED) and isinstance(needle, str):
            value = ecma_escape(needle)
            return self._answered(chosen.key, {"pattern": f"(?:^|,){value}(?:,|$)"})
        return None
