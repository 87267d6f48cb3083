"""What a form costs the server to check and to show, counted on save.

The unit is about a microsecond of one core of the machine bench/RESULTS.md
names (`python -m bench.form_cost` measures the forms the counts allow):

- Checking a set of answers walks the form once: each rule part counts as
  often as that walk may evaluate it. A block's conditions and a jump are
  evaluated once; the variables (their values and the rules that set them)
  again each time a page reads them after an answer they read came in.
  A part reading a long answer counts more (a text's longest / 2,000, a
  list's options / 50), and a `match` the characters it may read. Each
  answer key checked counts 2, each option of a choice checked 1 per 10,
  and a pattern the characters of the longest answer it may check.
- Showing a page draws every block on it (40 each, a file question 100),
  every option of a choice and matrix cell (8), option of a dropdown (6),
  scale and rating point (10), a ranking's options once for each place
  (n x n x 6, its texts n times), each recalled value at its longest
  (RECALL_SHOWN characters: 60), and the rule parts of its conditions
  (which the page carries for its script); in each of its languages.

A form's cost is its walk plus its costliest page; one above MAX_UNITS is
refused on save. Versions saved before the bound are served as they are.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from formsapi.language.blocks import (
    LISTED,
    Block,
    Dropdown,
    FileUpload,
    LongText,
    Matrix,
    Nps,
    PageBreak,
    Ranking,
    Rating,
    Scale,
    ShortText,
    YesNo,
    questions,
)
from formsapi.language.definition import HIDDEN_VALUE_MAX, RECALL, Layout, SetAction
from formsapi.language.flow import TEXT_VARIABLE_MAX
from formsapi.language.logic import TEXT_READ_MAX

MAX_UNITS = 100_000
# What a post or page may cost and still be worked out on the event loop:
# handing it to the worker thread and back costs more than this saves.
INLINE_UNITS = 2_000
# What compiling a version is charged: it is worked out off the loop.
COMPILE_UNITS = MAX_UNITS

BLOCK = 40
FILE = 100  # a file question's list, messages and script hooks
CHOICE = 8  # an option drawn as a radio button or a checkbox with its label
CELL = 8  # a matrix's radio button, labelled with its row and column
LISTED_OPTION = 6  # an option of a dropdown's list, or of a ranking's place
POINT = 10  # a scale's or rating's button
RECALLED = 60
KEY = 2
OPTIONS_PER_UNIT = 10
# Characters of a long answer a rule part reads in about a microsecond
# (comparing, searching or converting it), and items of a list answer.
CHARACTERS_PER_UNIT = 2_000
ITEMS_PER_UNIT = 50
# Characters a recalled value shows on a page (hosted/service.py cuts it).
RECALL_SHOWN = 500
# The longest answer of a question with no maximum of its own to read from.
SHORT_ANSWER = 2_048


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


def cost_of(layout: Layout, languages: Iterable[list[Block]] = ()) -> Cost:
    """The cost of the form `layout` lays out, drawn in its own language and
    in each of `languages` (its blocks translated)."""
    drawn = [*_pages(layout, layout.blocks)]
    for blocks in languages:
        drawn += _pages(layout, blocks)
    return Cost(_walk(layout), max(drawn, default=0))


@dataclass(frozen=True, slots=True)
class _Reads:
    """What reading each name costs a rule part beyond the part itself, and
    the longest text each name may hold."""

    extra: dict[str, int]
    longest: dict[str, int]


def parts(rule: Any, reads: _Reads | None = None) -> int:
    """A rule's parts: every operation and value in it, each `var` of a long
    answer weighed by its length, and each `match` by what it reads."""
    if isinstance(rule, list):
        return 1 + sum(parts(item, reads) for item in rule)
    if not isinstance(rule, dict):
        return 1
    count = 1 + sum(parts(value, reads) for value in rule.values())
    if reads is None:
        return count
    for operator, raw in rule.items():
        args = raw if isinstance(raw, list) else [raw]
        if operator == "var" and args and isinstance(args[0], str):
            count += reads.extra.get(args[0].partition(".")[0], 0)
        elif operator == "match":
            read = args[0] if args else None
            name = read.get("var") if isinstance(read, dict) else None
            name = name[0] if isinstance(name, list) and name else name
            longest = reads.longest.get(name, TEXT_READ_MAX) if isinstance(name, str) else None
            count += min(TEXT_READ_MAX, longest or TEXT_READ_MAX)
    return count


def _longest(block: Block) -> int:
    """The most characters an answer to `block` may hold."""
    if isinstance(block, ShortText):
        return block.max_length or 255
    if isinstance(block, LongText):
        return block.max_length or 10_000
    return SHORT_ANSWER


def _reads(layout: Layout) -> _Reads:
    extra: dict[str, int] = {}
    longest: dict[str, int] = {}
    for question in questions(layout.blocks):
        if isinstance(question, LISTED):
            extra[question.key] = len(question.options) // ITEMS_PER_UNIT
        elif isinstance(question, ShortText | LongText):
            longest[question.key] = _longest(question)
            extra[question.key] = longest[question.key] // CHARACTERS_PER_UNIT
    for hidden in layout.definition.hidden_fields:
        longest[hidden.key] = HIDDEN_VALUE_MAX
    longest["vars"] = TEXT_VARIABLE_MAX
    extra["vars"] = TEXT_VARIABLE_MAX // CHARACTERS_PER_UNIT
    return _Reads(extra, longest)


def _walk(layout: Layout) -> int:
    definition = layout.definition
    blocks = layout.blocks
    reads = _reads(layout)
    conditions = sum(
        parts(getattr(block, name, None), reads)
        for block in blocks
        for name in ("visible_if", "required_if")
        if getattr(block, name, None) is not None
    )
    jumps = sum(parts(rule, reads) for listed in layout.jumps.values() for rule, _ in listed)
    computed = sum(parts(v.value, reads) for v in definition.variables if v.value is not None)
    for rule in definition.logic:
        sets = [action for action in rule.then if isinstance(action, SetAction)]
        if sets:
            computed += parts(rule.if_, reads) + sum(parts(action.to, reads) for action in sets)
    checked = sum(
        KEY * len(question.parts())
        + len(getattr(question, "options", ())) // OPTIONS_PER_UNIT
        + (_longest(question) if getattr(question, "pattern", None) else 0)
        for question in questions(blocks)
    )
    return conditions + jumps + _computations(layout) * computed + checked


def _computations(layout: Layout) -> int:
    """How many times a walk through every page may compute the variables
    (language/flow.py: when something reads them after an answer they read)."""
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


def _pages(layout: Layout, blocks: list[Block]) -> list[int]:
    return [
        sum(
            _drawn(blocks[position])
            for position in range(layout.starts[page], layout.page_end(page))
        )
        for page in range(len(layout.starts))
    ]


def _recalls(*texts: str | None) -> int:
    return RECALLED * sum(len(RECALL.findall(text)) for text in texts if text)


def _drawn(block: Block) -> int:
    if isinstance(block, PageBreak):
        return 0
    said = _recalls(*(getattr(block, name, None) for name in ("title", "description", "text")))
    units = BLOCK + said
    units += sum(
        parts(rule)
        for rule in (getattr(block, "visible_if", None), getattr(block, "required_if", None))
        if rule is not None
    )
    if isinstance(block, Matrix):
        rows = _recalls(*(row.label for row in block.rows))
        return units + rows + CELL * len(block.rows) * len(block.columns)
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
    labels = _recalls(*(option.label for option in options))
    if isinstance(block, Ranking):
        # Each place lists every option, and names the question again.
        places = len(options)
        return units + places * (labels + said + LISTED_OPTION * places)
    if isinstance(block, Dropdown):
        return units + labels + LISTED_OPTION * (len(options) + 1)
    extra = 1 if getattr(block, "allow_other", False) else 0
    return units + labels + CHOICE * (len(options) + extra)


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
