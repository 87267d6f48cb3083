"""A form's run for one set of answers: the pages taken, what is shown and
required on them, the variables, and the ending reached.

The same walk serves a whole submission (the API) and a respondent going
page by page (the hosted page): answers of pages not taken are not read,
so a crafted post cannot reach a question the logic hides.
"""

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from formsapi.form import logic
from formsapi.form.blocks import LISTED, Question
from formsapi.form.definition import JumpAction, Layout, SetAction

TEXT_VARIABLE_MAX = 10_000


@dataclass(slots=True)
class Run:
    pages: list[int] = field(default_factory=list)  # the pages taken, in order
    shown: set[int] = field(default_factory=set)  # positions of the blocks shown
    required: set[str] = field(default_factory=set)  # keys of questions required
    variables: dict[str, Any] = field(default_factory=dict)
    ending: str | None = None  # its key; None when the form has no endings
    finished: bool = False  # False: stopped at a page whose answers are not all in

    def shown_keys(self, layout: Layout) -> set[str]:
        return {key for key, position in layout.positions.items() if position in self.shown}


def rule_data(layout: Layout, answers: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """Answers and hidden fields as rules read them: only those in `keys`,
    a multiple-choice answer as the list of its values."""
    data: dict[str, Any] = {}
    for key in keys:
        if key not in answers:
            continue
        value = answers[key]
        position = layout.positions.get(key)
        block = layout.blocks[position] if position is not None else None
        if isinstance(block, LISTED) and isinstance(value, str):
            value = value.split(",") if value else []
        data[key] = value
    return data


def _compute(layout: Layout, data: dict[str, Any], today: date) -> dict[str, Any]:
    """Variables from the data: initial values and computed ones in order,
    then every rule's sets in order."""
    values: dict[str, Any] = {}
    context = logic.Context({**data, "vars": values}, today)
    for variable in layout.definition.variables:
        value = variable.initial if variable.value is None else logic.apply(variable.value, context)
        values[variable.name] = _fit(value, variable.type)
    kinds = {v.name: v.type for v in layout.definition.variables}
    for rule in layout.definition.logic:
        sets = [a for a in rule.then if isinstance(a, SetAction)]
        if sets and logic.truthy(logic.apply(rule.if_, context)):
            for action in sets:
                values[action.set] = _fit(logic.apply(action.to, context), kinds[action.set])
    return values


def _fit(value: Any, kind: str) -> Any:
    """A variable's value as stored: a finite number, or text."""
    if kind == "number":
        number = logic.to_number(value)
        return 0 if number != number or number in (float("inf"), float("-inf")) else number
    return logic.to_string(value)[:TEXT_VARIABLE_MAX] if value is not None else ""


def walk(layout: Layout, answers: dict[str, Any], today: date, *, upto: int | None = None) -> Run:
    """Walks the form from its first page with these answers.

    Each page's blocks are shown by their `visibleIf`, read with the answers
    of the pages taken so far; leaving a page takes the first jump of the
    rules that holds, else the next page whose `visibleIf` holds. With
    `upto` (a page), the walk stops on reaching it: what the hosted page
    shows there."""
    run = Run()
    hidden = {h.key for h in layout.definition.hidden_fields}
    taken: set[str] = set(hidden)
    page = 0
    while True:
        run.pages.append(page)
        data = rule_data(layout, answers, taken)
        run.variables = _compute(layout, data, today)
        context = logic.Context({**data, "vars": run.variables}, today)
        # The page's blocks, each shown by its condition read with what came before.
        for position in range(layout.starts[page], layout.page_end(page)):
            block = layout.blocks[position]
            condition = getattr(block, "visible_if", None)
            context.data = {**rule_data(layout, answers, taken), "vars": run.variables}
            if condition is None or logic.truthy(logic.apply(condition, context)):
                run.shown.add(position)
                key = getattr(block, "key", None)
                if isinstance(key, str) and key in layout.positions:
                    taken.add(key)
                    if _required(block, context):  # type: ignore[arg-type]
                        run.required.add(key)
        if upto is not None and page == upto:
            return run
        data = rule_data(layout, answers, taken)
        run.variables = _compute(layout, data, today)
        context = logic.Context({**data, "vars": run.variables}, today)
        target = _jump(layout, page, context)
        if target is not None and target in layout.endings:
            run.ending = target
            break
        following = layout.page_keys[target] if target is not None else page + 1
        shown = _next_shown(layout, following, context)
        if shown is None:
            run.ending = _final_ending(layout, context)
            break
        page = shown
    run.finished = True
    return run


def _required(question: Question, context: logic.Context) -> bool:
    if question.required:
        return True
    return question.required_if is not None and logic.truthy(
        logic.apply(question.required_if, context)
    )


def _jump(layout: Layout, page: int, context: logic.Context) -> str | None:
    """The target of the first rule that jumps from this page and holds."""
    for rule in layout.definition.logic:
        for action in rule.then:
            if (
                isinstance(action, JumpAction)
                and action.after is not None
                and layout.page_of(layout.positions[action.after]) == page
                and logic.truthy(logic.apply(rule.if_, context))
            ):
                return action.jump
    return None


def _next_shown(layout: Layout, page: int, context: logic.Context) -> int | None:
    while page < len(layout.starts):
        condition = getattr(layout.blocks[layout.starts[page]], "visible_if", None)
        if page == 0 or condition is None or logic.truthy(logic.apply(condition, context)):
            return page
        page += 1
    return None


def _final_ending(layout: Layout, context: logic.Context) -> str | None:
    """The first ending a jump without `after` picks, else the last ending."""
    for rule in layout.definition.logic:
        for action in rule.then:
            if (
                isinstance(action, JumpAction)
                and action.after is None
                and logic.truthy(logic.apply(rule.if_, context))
            ):
                return action.jump
    endings = layout.definition.endings
    return endings[-1].key if endings else None
