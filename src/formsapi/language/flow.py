"""A form's run for one set of answers: the pages taken, what is shown and
required on them, the variables, and the ending reached.

The same walk serves a whole submission (the API) and a respondent going
page by page (the hosted page): answers of pages not taken are not read,
so a crafted post cannot reach a question the logic hides.
"""

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from formsapi.language import logic
from formsapi.language.blocks import LISTED, QUESTION_TYPES, OtherText
from formsapi.language.definition import Layout, SetAction

TEXT_VARIABLE_MAX = 10_000


@dataclass(slots=True)
class Run:
    pages: list[int] = field(default_factory=list)  # the pages taken, in order
    shown: set[int] = field(default_factory=set)  # positions of the blocks shown
    required: set[str] = field(default_factory=set)  # keys of questions required
    variables: dict[str, Any] = field(default_factory=dict)
    ending: str | None = None  # its key; None when the form has no endings

    def shown_keys(self, layout: Layout) -> set[str]:
        return {key for key, position in layout.positions.items() if position in self.shown}


def rule_data(layout: Layout, answers: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """Answers and hidden fields as rules read them: only those in `keys`,
    a multiple-choice answer (or a ranking) as the list of its values."""
    data: dict[str, Any] = {}
    for key in keys:
        if key in answers:
            data[key] = _as_rules_read(layout, key, answers[key])
    return data


def _as_rules_read(layout: Layout, key: str, value: Any) -> Any:
    position = layout.positions.get(key)
    listed = position is not None and isinstance(layout.blocks[position], LISTED)
    if listed and isinstance(value, str):
        return value.split(",") if value else []
    return value


def _compute(layout: Layout, context: logic.Context) -> None:
    """Variables from the context's data, into its `vars`: initial values
    and computed ones in order, then every rule's sets in order."""
    values: dict[str, Any] = context.data["vars"]
    values.clear()
    for variable in layout.definition.variables:
        value = variable.initial if variable.value is None else logic.apply(variable.value, context)
        values[variable.name] = _fit(value, variable.type)
    kinds = {v.name: v.type for v in layout.definition.variables}
    for rule in layout.definition.logic:
        sets = [a for a in rule.then if isinstance(a, SetAction)]
        if sets and logic.truthy(logic.apply(rule.if_, context)):
            for action in sets:
                values[action.set] = _fit(logic.apply(action.to, context), kinds[action.set])


def _fit(value: Any, kind: str) -> Any:
    """A variable's value as stored: a finite number, or text."""
    if kind == "number":
        number = logic.to_number(value)
        return 0 if number != number or number in (float("inf"), float("-inf")) else number
    return logic.to_string(value)[:TEXT_VARIABLE_MAX] if value is not None else ""


class _Walk:
    """The data rules read as the walk takes answers in, and the variables,
    computed again only when something reads them after an answer came in."""

    def __init__(self, layout: Layout, answers: dict[str, Any], today: date) -> None:
        self.layout = layout
        self.answers = answers
        hidden = {h.key for h in layout.definition.hidden_fields}
        data = rule_data(layout, answers, hidden)
        data["vars"] = {}
        self.context = logic.Context(data, today)
        self.stale = bool(layout.definition.variables)

    def take(self, key: str) -> None:
        if key in self.answers:
            value = _as_rules_read(self.layout, key, self.answers[key])
            head, dot, row = key.partition(".")
            if dot:  # a matrix's row: rules read it as question.row
                self.context.data.setdefault(head, {})[row] = value
            else:
                self.context.data[key] = value
            if key in self.layout.variable_inputs:
                self.stale = True

    def variables(self) -> dict[str, Any]:
        if self.stale:
            _compute(self.layout, self.context)
            self.stale = False
        values: dict[str, Any] = self.context.data["vars"]
        return values

    def holds(self, rule: Any) -> bool:
        return logic.truthy(logic.apply(rule, self.context))


def walk(layout: Layout, answers: dict[str, Any], today: date) -> Run:
    """Walks the form from its first page with these answers.

    Each page's blocks are shown by their `visibleIf`, read with the answers
    of the pages taken so far; leaving a page takes the first jump of the
    rules that holds, else the next page whose `visibleIf` holds."""
    run = Run()
    state = _Walk(layout, answers, today)
    page = 0
    while True:
        run.pages.append(page)
        if page in layout.pages_reading_variables:
            state.variables()
        # The page's blocks, each shown by its condition read with what came before.
        for position in range(layout.starts[page], layout.page_end(page)):
            block = layout.blocks[position]
            condition = getattr(block, "visible_if", None)
            if condition is None or state.holds(condition):
                run.shown.add(position)
                if isinstance(block, QUESTION_TYPES):
                    required = block.required or (
                        block.required_if is not None and state.holds(block.required_if)
                    )
                    for key, part in block.parts():
                        if required and not isinstance(part, OtherText):  # asked for with Other
                            run.required.add(key)
                        state.take(key)
        if layout.moves_read_variables:
            state.variables()
        target = _first(state, layout.jumps.get(page, ()))
        if target is not None and target in layout.endings:
            run.ending = target
            break
        following = layout.page_keys[target] if target is not None else page + 1
        shown = _next_shown(layout, following, state)
        if shown is None:
            state.variables()
            run.ending = _first(state, layout.jumps.get(None, ()))
            if run.ending is None and layout.definition.endings:
                run.ending = layout.definition.endings[-1].key
            break
        page = shown
    run.variables = dict(state.variables())
    return run


def _first(state: _Walk, jumps: Any) -> str | None:
    """The target of the first of these jumps whose rule holds."""
    for condition, target in jumps:
        if state.holds(condition):
            return str(target)
    return None


def _next_shown(layout: Layout, page: int, state: _Walk) -> int | None:
    while page < len(layout.starts):
        condition = getattr(layout.blocks[layout.starts[page]], "visible_if", None)
        if page == 0 or condition is None or state.holds(condition):
            return page
        page += 1
    return None
