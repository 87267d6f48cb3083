"""What a form costs the server to check and to show, counted on save.

The unit is about a microsecond of one core of the machine bench/RESULTS.md
names (`python -m bench.form_cost` measures the forms the counts allow):

- Checking a set of answers walks the form once: each rule part counts as
  often as that walk may evaluate it. A block's conditions and a jump are
  evaluated once; the variables (their values and the rules that set them)
  again each time a page reads them after an answer they read came in.
  Each answer key checked counts 2, and each option of a choice checked 1
  per 10.
- Showing a page draws every block on it (40 each, a file question 100),
  every option of a choice and matrix cell (8), option of a dropdown (6),
  scale and rating point (10), a ranking's options once for each place
  (n x n x 6), each recalled value at its longest (RECALL_SHOWN characters:
  60), and the rule parts of its conditions (which the page carries for its
  script).

A form's cost is its walk plus its costliest page; one above MAX_UNITS is
refused on save. Versions saved before the bound are served as they are.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from formsapi.form.blocks import (
    Block,
    Dropdown,
    FileUpload,
    Matrix,
    Nps,
    PageBreak,
    Ranking,
    Rating,
    Scale,
    YesNo,
    questions,
)
from formsapi.form.definition import RECALL, Layout, SetAction

MAX_UNITS = 100_000
# What a post or page may cost and still be worked out on the event loop:
# handing it to the worker thread and back costs more than this saves.
INLINE_UNITS = 2_000

BLOCK = 40
FILE = 100  # a file question's list, messages and script hooks
CHOICE = 8  # an option drawn as a radio button or a checkbox with its label
CELL = 8  # a matrix's radio button, labelled with its row and column
LISTED = 6  # an option of a dropdown's list, or of a ranking's place
POINT = 10  # a scale's or rating's button
RECALLED = 60
KEY = 2
OPTIONS_PER_UNIT = 10
# Characters a recalled value shows on a page (hosted/service.py cuts it).
RECALL_SHOWN = 500


@dataclass(frozen=True, slots=True)
class Cost:
    """A form version's cost in units: one walk of its answers, and its
    costliest page."""

    walk: int
    page: int

    @property
    def units(self) -> int:
        return self.walk + self.page


NO_COST = Cost(0, 0)


def cost_of(layout: Layout) -> Cost:
    return Cost(_walk(layout), max(_pages(layout), default=0))


def parts(rule: Any) -> int:
    """A rule's parts: every operation and value in it."""
    if isinstance(rule, list):
        return 1 + sum(parts(item) for item in rule)
    if isinstance(rule, dict):
        return 1 + sum(parts(value) for value in rule.values())
    return 1


def _walk(layout: Layout) -> int:
    definition = layout.definition
    blocks = layout.blocks
    conditions = sum(
        parts(getattr(block, name, None))
        for block in blocks
        for name in ("visible_if", "required_if")
        if getattr(block, name, None) is not None
    )
    jumps = sum(parts(rule) for listed in layout.jumps.values() for rule, _ in listed)
    computed = sum(parts(v.value) for v in definition.variables if v.value is not None)
    for rule in definition.logic:
        sets = [action for action in rule.then if isinstance(action, SetAction)]
        if sets:
            computed += parts(rule.if_) + sum(parts(action.to) for action in sets)
    checked = sum(
        KEY * len(question.parts()) + len(getattr(question, "options", ())) // OPTIONS_PER_UNIT
        for question in questions(blocks)
    )
    return conditions + jumps + _computations(layout) * computed + checked


def _computations(layout: Layout) -> int:
    """How many times a walk through every page may compute the variables
    (form/flow.py: when something reads them after an answer they read)."""
    if not layout.definition.variables:
        return 0
    count, stale = 0, True
    for page in range(len(layout.starts)):
        if page in layout.pages_reading_variables and stale:
            count, stale = count + 1, False
        for position in range(layout.starts[page], layout.page_end(page)):
            block = layout.blocks[position]
            keys = [key for key, _ in block.parts()] if hasattr(block, "parts") else []
            if any(key in layout.variable_inputs for key in keys):
                stale = True
        if layout.moves_read_variables and stale:
            count, stale = count + 1, False
    return count + (1 if stale else 0)


def _pages(layout: Layout) -> Iterable[int]:
    for page in range(len(layout.starts)):
        yield sum(
            _drawn(layout.blocks[position])
            for position in range(layout.starts[page], layout.page_end(page))
        )


def _drawn(block: Block) -> int:
    if isinstance(block, PageBreak):
        return 0
    units = BLOCK + RECALLED * sum(
        len(RECALL.findall(text))
        for text in (getattr(block, name, None) for name in ("title", "description", "text"))
        if text
    )
    units += sum(
        parts(rule)
        for rule in (getattr(block, "visible_if", None), getattr(block, "required_if", None))
        if rule is not None
    )
    if isinstance(block, Matrix):
        return units + CELL * len(block.rows) * len(block.columns)
    if isinstance(block, Nps):
        return units + POINT * 11
    if isinstance(block, Scale):
        return units + POINT * (block.max - block.min + 1)
    if isinstance(block, Rating):
        return units + POINT * block.scale
    if isinstance(block, YesNo):
        return units + POINT * 2
    if isinstance(block, FileUpload):
        return units - BLOCK + FILE
    options = getattr(block, "options", None) or []
    recalled = RECALLED * sum(len(RECALL.findall(option.label)) for option in options)
    if isinstance(block, Ranking):
        return units + recalled + LISTED * len(options) ** 2
    if isinstance(block, Dropdown):
        return units + recalled + LISTED * (len(options) + 1)
    extra = 1 if getattr(block, "allow_other", False) else 0
    return units + recalled + CHOICE * (len(options) + extra)


def problem(cost: Cost) -> tuple[str, str] | None:
    """(JSON pointer, problem) for a form costing more than MAX_UNITS."""
    if cost.units <= MAX_UNITS:
        return None
    where = "/logic" if cost.walk > cost.page else "/blocks"
    return (
        where,
        f"costs {cost.units:,} units to check and show (its rules {cost.walk:,}, its "
        f"largest page {cost.page:,}), more than the {MAX_UNITS:,} a form may: fewer or "
        "smaller rules, fewer options on a page, or more pages (README: a form's cost)",
    )
