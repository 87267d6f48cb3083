"""What a form holds besides its blocks: hidden fields, variables, rules
and endings; and the check of the whole definition on save.

Conditions that belong to one block (`visibleIf`, `requiredIf`) sit on the
block; what spans the form sits here:
- hidden fields: values a link carries (`?utm_source=...`), stored with the
  answers under their key;
- variables: numbers or text the server computes, stored with the answers
  as `vars.<name>`;
- rules: when a JSON Logic condition holds, set a variable or jump;
- endings: thank-you texts or redirects; logic picks one, else the last.
"""

import re
from bisect import bisect_right
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from formsapi.kit.schemas import CleanStr, Schema
from formsapi.language import logic, translation
from formsapi.language.blocks import (
    KEY_PATTERN,
    LISTED,
    NUMERIC,
    QUESTION_TYPES,
    Block,
    BlockList,
    Bound,
    Matrix,
    PageBreak,
    Question,
    Rule,
    SingleChoice,
    YesNo,
    dump_blocks,
    parts,
)
from formsapi.language.translation import MAX_LANGUAGES, Language, Message, Translation

Key = Annotated[CleanStr, Field(pattern=KEY_PATTERN)]
MAX_RULES = 200
MAX_VARIABLES = 50
MAX_HIDDEN = 50
MAX_ENDINGS = 20
HIDDEN_VALUE_MAX = 500
# {{key}} or {{key|fallback}}: an answer, hidden field or variable in text.
RECALL = re.compile(r"\{\{\s*([a-z][a-z0-9_.]{0,80})\s*(?:\|([^{}]{0,200}))?\}\}")


class HiddenField(Schema):
    key: Key
    label: CleanStr | None = Field(default=None, max_length=200)


class Variable(Schema):
    """A number or text the server computes: from `initial`, changed by
    rules' `set` actions, or (with `value`) computed from a JSON Logic
    expression, in which case rules do not set it."""

    name: Key
    type: Literal["number", "text"] = "number"
    initial: Bound | CleanStr | None = None
    value: Rule = Field(default=None, description="JSON Logic: the variable's value.")

    @model_validator(mode="after")
    def _initial_fits(self) -> "Variable":
        if self.initial is None:
            self.initial = 0 if self.type == "number" else ""
        elif (self.type == "number") != (not isinstance(self.initial, str)):
            raise ValueError(f"initial must be a {self.type}")
        return self


class SetAction(Schema):
    set: Key = Field(description="The variable to set.")
    to: Rule = Field(description="JSON Logic: its new value.")


class JumpAction(Schema):
    jump: Key = Field(description="A page's key (its page_break) or an ending's key.")
    after: Key | None = Field(
        default=None,
        description="The question whose page the jump leaves; without it, the jump is "
        "taken when the respondent leaves the last page, and must go to an ending.",
    )


class LogicRule(Schema):
    if_: Rule = Field(default=True, alias="if", description="JSON Logic; default: always.")
    then: Annotated[list[SetAction | JumpAction], Field(min_length=1, max_length=20)]


class Ending(Schema):
    """A thank-you text, or a redirect (http or https) with recalled values."""

    key: Key
    title: CleanStr | None = Field(default=None, max_length=500)
    text: CleanStr | None = Field(default=None, max_length=5000)
    redirect: CleanStr | None = Field(default=None, max_length=2048)

    @model_validator(mode="after")
    def _one_kind(self) -> "Ending":
        if self.redirect is not None and (self.title or self.text):
            raise ValueError("an ending is a text (title, text) or a redirect, not both")
        return self


DEFAULT_LANGUAGE = "en"
LANGUAGE_DESCRIPTION = "The language of the form's own texts (a BCP 47 tag)."
TRANSLATIONS_DESCRIPTION = (
    "The form's texts in other languages, by language tag: what a translation leaves "
    "out shows in the form's own language."
)
RESUME_DAYS = 30
MAX_RESUME_DAYS = 365


class Definition(Schema):
    hidden_fields: Annotated[list[HiddenField], Field(max_length=MAX_HIDDEN)] = Field(
        default_factory=list
    )
    variables: Annotated[list[Variable], Field(max_length=MAX_VARIABLES)] = Field(
        default_factory=list
    )
    logic: list[LogicRule] = Field(default_factory=list, max_length=MAX_RULES)
    endings: list[Ending] = Field(default_factory=list, max_length=MAX_ENDINGS)
    language: Language = Field(default=DEFAULT_LANGUAGE, description=LANGUAGE_DESCRIPTION)
    translations: Annotated[dict[Language, Translation], Field(max_length=MAX_LANGUAGES)] = Field(
        default_factory=dict, description=TRANSLATIONS_DESCRIPTION
    )
    messages: dict[Message, Annotated[CleanStr, Field(min_length=1, max_length=200)]] = Field(
        default_factory=dict,
        description="The hosted page's own words (buttons, 'is required') in the form's language.",
    )
    resume_days: int = Field(
        default=RESUME_DAYS,
        ge=1,
        le=MAX_RESUME_DAYS,
        description="How long a respondent's unfinished answers, and the link that resumes "
        "them, are kept after their last change (days).",
    )

    def dump(self) -> dict[str, Any]:
        dumped = self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
        # A translation as sent: the texts it gives, no empty lists of labels.
        dumped["translations"] = {
            tag: texts.model_dump(by_alias=True, exclude_defaults=True)
            for tag, texts in self.translations.items()
        }
        return dumped


def answer_keys(blocks: list[Block], definition: Definition) -> list[str]:
    """Every key a submission's answers can hold, in form order: questions,
    hidden fields, then variables (`vars.<name>`)."""
    return [
        *(key for key, _ in parts(blocks)),
        *(hidden.key for hidden in definition.hidden_fields),
        *(f"vars.{variable.name}" for variable in definition.variables),
    ]


def kind_of(question: Question) -> tuple[str, tuple[str, ...] | None]:
    """A question's answer as rules see it: its type, and its options."""
    if isinstance(question, NUMERIC):
        return "number", None
    if isinstance(question, LISTED):
        return "list", tuple(question.values())
    if isinstance(question, SingleChoice):
        return "text", tuple(question.values())
    if isinstance(question, YesNo):
        return "text", ("yes", "no")
    return "text", None


class Layout:
    """Where everything of a form is: pages (as ranges of block positions),
    question positions, and the names rules may read."""

    def __init__(self, blocks: list[Block], definition: Definition) -> None:
        self.blocks = blocks
        self.definition = definition
        # Page i runs from starts[i] (its page_break, or 0) to the next start.
        self.starts = [0] + [i for i, b in enumerate(blocks) if isinstance(b, PageBreak)]
        self.page_keys = {
            block.key: page
            for page, start in enumerate(self.starts)
            if start < len(blocks) and isinstance(block := blocks[start], PageBreak) and block.key
        }
        # Where each question is, by its key and (a matrix's rows) its answers' keys.
        self.positions = {question.key: i for i, question in _questions(blocks)}
        self.names: dict[str, logic.Name] = {}
        for i, question in _questions(blocks):
            for key, part in question.parts():
                self.positions[key] = i
                if part is question:
                    kind, options = kind_of(question)
                    self.names[key] = logic.Name(kind, i, options, repr(key))
                elif isinstance(question, Matrix):
                    columns = tuple(column.value for column in question.columns)
                    self.names[key] = logic.Name("text", i, columns, repr(key))
                else:  # a choice's Other text
                    self.names[key] = logic.Name("text", i, None, repr(key))
        for hidden in definition.hidden_fields:
            self.names[hidden.key] = logic.Name("text", None, None, repr(hidden.key))
        for variable in definition.variables:
            self.names[f"vars.{variable.name}"] = logic.Name(
                variable.type, None, None, repr(f"vars.{variable.name}")
            )
        self.endings = {ending.key: ending for ending in definition.endings}
        # Where the walk needs variables before the end: the pages whose blocks'
        # conditions read them, and whether jumps or page conditions do.
        self.pages_reading_variables = {
            self.page_of(position)
            for position, block in enumerate(blocks)
            if not isinstance(block, PageBreak)
            and any(
                logic.reads_variables(getattr(block, name, None))
                for name in ("visible_if", "required_if")
            )
        }
        self.moves_read_variables = any(
            logic.reads_variables(block.visible_if)
            for block in blocks
            if isinstance(block, PageBreak)
        ) or any(
            logic.reads_variables(rule.if_)
            for rule in definition.logic
            if any(isinstance(action, JumpAction) for action in rule.then)
        )
        # Jumps by the page they leave (None: after the last page), in rule order.
        self.jumps: dict[int | None, list[tuple[Any, str]]] = {}
        for rule in definition.logic:
            for action in rule.then:
                if isinstance(action, JumpAction):
                    after = action.after
                    leaves = (
                        self.page_of(self.positions[after]) if after in self.positions else None
                    )
                    if after is None or leaves is not None:
                        self.jumps.setdefault(leaves, []).append((rule.if_, action.jump))

    @cached_property
    def variable_inputs(self) -> frozenset[str]:
        """The answers and hidden fields the variables read (their values and
        the rules that set them): answers to anything else leave them as they
        are. A list answer is read by its items too (`ranking.0`)."""
        read: set[str] = set()
        for variable in self.definition.variables:
            read |= logic.names_read(variable.value)
        for rule in self.definition.logic:
            sets = [action.to for action in rule.then if isinstance(action, SetAction)]
            if sets:
                read |= logic.names_read([rule.if_, *sets])
        return frozenset(read | {name.partition(".")[0] for name in read})

    def page_of(self, position: int) -> int:
        return max(0, bisect_right(self.starts, position) - 1)

    def page_end(self, page: int) -> int:
        """The position just after the page's last block."""
        return self.starts[page + 1] if page + 1 < len(self.starts) else len(self.blocks)

    def page_positions(self, page: int) -> range:
        """The positions of the page's blocks, its page_break first."""
        return range(self.starts[page], self.page_end(page))


def _questions(blocks: list[Block]) -> list[tuple[int, Question]]:
    return [(i, block) for i, block in enumerate(blocks) if isinstance(block, QUESTION_TYPES)]


def check(
    blocks: list[Block], definition: Definition, layout: Layout | None = None
) -> list[tuple[str, str]]:
    """(JSON pointer, problem) for everything wrong across the blocks and the
    definition: names used twice, rules that read what they cannot, jumps
    that go back, variables that read themselves or later ones, recall of
    what does not exist. `layout`: theirs, when made already."""
    errors: list[tuple[str, str]] = []
    layout = layout or Layout(blocks, definition)
    errors += _unique_names(blocks, definition) + _reserved(blocks, definition)
    matches = 0

    def rule(value: Any, pointer: str, before: int | None, where: str) -> set[str]:
        nonlocal matches
        checker = logic.Checker(layout.names, before, where)
        errors.extend(checker.check(value, pointer))
        matches += checker.matches
        if matches > logic.MAX_MATCHES and checker.matches:
            errors.append(
                (pointer, f"a form's rules use `match` at most {logic.MAX_MATCHES} times")
            )
        return checker.read

    for i, block in enumerate(blocks):
        where = f"block {i}"
        condition = getattr(block, "visible_if", None)
        if condition is not None:
            rule(condition, f"/blocks/{i}/visibleIf", i, where)
        required_if = getattr(block, "required_if", None)
        if required_if is not None:
            rule(required_if, f"/blocks/{i}/requiredIf", i, where)
        errors += _recall_errors(block, i, layout)

    settable = {v.name for v in definition.variables if v.value is None}
    for index, variable in enumerate(definition.variables):
        if variable.value is None:
            continue
        pointer = f"/variables/{index}/value"
        read = rule(variable.value, pointer, None, "")
        later = {f"vars.{v.name}" for v in definition.variables[index:]}
        for name in sorted(read & later):
            problem = (
                "refers to itself"
                if name == f"vars.{variable.name}"
                else (f"refers to {name!r}, declared after it")
            )
            errors.append(
                (pointer, f"{problem}: variables are computed in order, so this would make a cycle")
            )

    for index, item in enumerate(definition.logic):
        jumps_after = [a.after for a in item.then if isinstance(a, JumpAction) and a.after]
        before = None
        where = ""
        if jumps_after and jumps_after[0] in layout.positions:
            page = layout.page_of(layout.positions[jumps_after[0]])
            before, where = layout.page_end(page), f"the page the jump leaves ({jumps_after[0]!r})"
        rule(item.if_, f"/logic/{index}/if", before, where)
        for number, action in enumerate(item.then):
            pointer = f"/logic/{index}/then/{number}"
            if isinstance(action, SetAction):
                errors += _set_errors(action, pointer, settable, definition, rule)
            else:
                errors += _jump_errors(action, pointer, layout)
    for index, ending in enumerate(definition.endings):
        for field in ("title", "text", "redirect"):
            text = getattr(ending, field)
            if text:
                errors += _recall_in(text, f"/endings/{index}/{field}", None, layout)
        if ending.redirect is not None:
            bare = RECALL.sub("x", ending.redirect)
            authority = re.match(r"https?://[^\s/?#]+", ending.redirect)
            if not re.match(r"https?://[^\s/?#]+", bare):
                errors.append(
                    (f"/endings/{index}/redirect", "must be an http or https URL with a host")
                )
            elif authority is None or "{{" in authority.group():
                errors.append(
                    (
                        f"/endings/{index}/redirect",
                        "may recall answers in its path and query, not in its scheme or host",
                    )
                )
    endings = [ending.model_dump(by_alias=True, exclude_none=True) for ending in definition.endings]
    errors += translation.check(
        dump_blocks(blocks), endings, definition.language, definition.translations
    )
    return errors


def translated(
    blocks: list[Block], definition: Definition, layout: Layout
) -> tuple[dict[str, list[Block]], list[tuple[str, str]]]:
    """The blocks in each language the form is translated into, and
    (JSON pointer, problem) for a translated text that would not fit its
    block (a title longer than a title may be) or recalls what it cannot."""
    shown: dict[str, list[Block]] = {}
    errors: list[tuple[str, str]] = []
    dumped = dump_blocks(blocks)
    names = [translation.name_of(block, i) for i, block in enumerate(dumped)]
    for tag, texts in definition.translations.items():
        base = f"/translations/{tag}/blocks"
        _, given, _ = translation.translate("", dumped, [], texts)
        try:
            shown[tag] = BlockList.validate_python(given)
        except ValidationError as invalid:
            for found in invalid.errors()[:20]:
                place = [str(part) for part in found["loc"]]
                # (position, type, field, ...): where the translation said it.
                at = "/".join([names[int(place[0])], *place[2:3]]) if place else ""
                errors.append((f"{base}/{at}", found["msg"]))
            continue
        for position, block in enumerate(shown[tag]):
            for pointer, problem in _recall_errors(block, position, layout):
                field = pointer.split("/")[3]  # /blocks/{i}/{field}[/{index}/label]
                errors.append((f"{base}/{names[position]}/{field}", problem))
    return shown, errors


# Taken: `vars` holds the variables in rule data; `constructor` is on every
# JavaScript object, so json-logic-js would find it where no answer is.
RESERVED = frozenset(("vars", "constructor"))


def _reserved(blocks: list[Block], definition: Definition) -> list[tuple[str, str]]:
    named = [
        *((f"/blocks/{i}/key", getattr(b, "key", None)) for i, b in enumerate(blocks)),
        *((f"/blocks/{i}/rows/{j}/value", row.value)
          for i, b in enumerate(blocks) if isinstance(b, Matrix) for j, row in enumerate(b.rows)),
        *((f"/hiddenFields/{i}/key", h.key) for i, h in enumerate(definition.hidden_fields)),
        *((f"/variables/{i}/name", v.name) for i, v in enumerate(definition.variables)),
        *((f"/endings/{i}/key", e.key) for i, e in enumerate(definition.endings)),
    ]  # fmt: skip
    return [(pointer, f"{key!r} is reserved") for pointer, key in named if key in RESERVED]


def _unique_names(blocks: list[Block], definition: Definition) -> list[tuple[str, str]]:
    """Question, page, hidden-field and ending keys share one namespace: a
    jump's target and a rule's reference are never ambiguous."""
    seen: dict[str, str] = {}
    errors = []
    named = [
        *((f"/blocks/{i}/key", b.key) for i, b in enumerate(blocks) if isinstance(b, PageBreak)),
        *((f"/hiddenFields/{i}/key", h.key) for i, h in enumerate(definition.hidden_fields)),
        *((f"/endings/{i}/key", e.key) for i, e in enumerate(definition.endings)),
        # A choice's Other text is answered under <key>_other.
        *(
            (f"/blocks/{i}/allowOther", f"{q.key}_other")
            for i, q in _questions(blocks)
            if getattr(q, "allow_other", None)
        ),
    ]
    for i, question in _questions(blocks):
        seen[question.key] = f"/blocks/{i}/key"
    for pointer, key in named:
        if key is None:
            continue
        if key in seen:
            errors.append((pointer, f"repeats the key at {seen[key]}: keys must be unique"))
        else:
            seen[key] = pointer
    names: dict[str, int] = {}
    for index, variable in enumerate(definition.variables):
        if variable.name in names:
            errors.append(
                (f"/variables/{index}/name", f"repeats variable {names[variable.name]}'s name")
            )
        names.setdefault(variable.name, index)
    return errors


def _set_errors(
    action: SetAction, pointer: str, settable: set[str], definition: Definition, rule: Any
) -> list[tuple[str, str]]:
    variable = next((v for v in definition.variables if v.name == action.set), None)
    if variable is None:
        return [(f"{pointer}/set", f"sets {action.set!r}, which is not a variable of this form")]
    if action.set not in settable:
        return [(f"{pointer}/set", f"sets {action.set!r}, which is computed by its value")]
    rule(action.to, f"{pointer}/to", None, "")
    literal = action.to
    if (variable.type == "number" and isinstance(literal, str)) or (
        variable.type == "text" and isinstance(literal, bool | int | float)
    ):
        return [
            (
                f"{pointer}/to",
                f"sets {variable.type} variable {action.set!r} to a "
                f"{'text' if isinstance(literal, str) else 'number'}",
            )
        ]
    return []


def _jump_errors(action: JumpAction, pointer: str, layout: Layout) -> list[tuple[str, str]]:
    if action.after is not None and action.after not in layout.positions:
        return [(f"{pointer}/after", f"names {action.after!r}, which is not a question")]
    if action.jump in layout.endings:
        return []
    if action.jump not in layout.page_keys:
        return [
            (f"{pointer}/jump", f"goes to {action.jump!r}, which is neither a page nor an ending")
        ]
    if action.after is None:
        return [
            (f"{pointer}/jump", "a jump without `after` ends the form: it must go to an ending")
        ]
    here = layout.page_of(layout.positions[action.after])
    if layout.page_keys[action.jump] <= here:
        return [
            (
                f"{pointer}/jump",
                f"goes back to {action.jump!r}: jumps only go forward, so a form never loops",
            )
        ]
    return []


def _recall_errors(block: Block, position: int, layout: Layout) -> list[tuple[str, str]]:
    errors = []
    for field in ("title", "description", "text"):
        text = getattr(block, field, None)
        if text:
            errors += _recall_in(text, f"/blocks/{position}/{field}", position, layout)
    for index, option in enumerate(getattr(block, "options", None) or []):
        errors += _recall_in(
            option.label, f"/blocks/{position}/options/{index}/label", position, layout
        )
    return errors


def _recall_in(
    text: str, pointer: str, position: int | None, layout: Layout
) -> list[tuple[str, str]]:
    errors = []
    for found in RECALL.finditer(text):
        name = found.group(1)
        known = layout.names.get(name)
        if known is None:
            errors.append((pointer, f"recalls {{{{{name}}}}}, which this form does not have"))
        elif position is not None and known.position is not None and known.position >= position:
            errors.append((pointer, f"recalls {name!r}, which is asked later"))
    return errors
