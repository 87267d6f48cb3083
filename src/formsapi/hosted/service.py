"""The respondent's side: a form's public page turns posted fields into
answers and takes them through the same validation as the API."""

import hashlib
import json
import random
import re
import secrets
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import repository as form_repository
from formsapi.kit.ids import is_plausible
from formsapi.kit.secretbox import SecretBox
from formsapi.language import flow, logic
from formsapi.language.blocks import (
    LISTED,
    NUMERIC,
    QUESTION_TYPES,
    Block,
    Matrix,
    MultipleChoice,
    PageBreak,
    Question,
    SingleChoice,
    questions,
)
from formsapi.language.compiled import Compiled
from formsapi.language.cost import RECALL_SHOWN
from formsapi.language.definition import HIDDEN_VALUE_MAX, RECALL, Ending, Layout
from formsapi.models import Form


class Posted(Protocol):
    """The fields of a posted form (the web framework's FormData fits)."""

    def get(self, key: str) -> object: ...

    def getlist(self, key: str) -> list[Any]: ...


async def public_form(session: AsyncSession, form_id: str) -> tuple[Form, list[str]] | None:
    """The form, if public, and the origins allowed to show it in a frame:
    the form's own list when it has one (an empty one too: no site may),
    else its organization's."""
    found = await form_repository.get_public(session, form_id) if is_plausible(form_id) else None
    if found is None:
        return None
    form, organization_origins = found
    own = form.embed_origins
    return form, list(own if own is not None else organization_origins or [])


def _typed(question: Question, raw: str) -> Any:
    """A posted string as the type its question answers; unparseable numbers go
    through as text, so validation reports them in its own words."""
    if isinstance(question, NUMERIC):
        try:
            number = float(raw)
        except ValueError:
            return raw
        return int(number) if number.is_integer() else number
    return raw


def answers_from(blocks: list[Block], posted: Posted) -> dict[str, Any]:
    """Posted fields to answers: empty fields are no answer; checkboxes join."""
    answers: dict[str, Any] = {}
    for question in questions(blocks):
        if isinstance(question, Matrix):
            for key, _ in question.parts():
                raw = posted.get(key)
                if isinstance(raw, str) and raw:
                    answers[key] = raw
            continue
        if getattr(question, "allow_other", None):
            other = posted.get(f"{question.key}_other")
            if isinstance(other, str) and other.strip():
                answers[f"{question.key}_other"] = other.strip()
        if isinstance(question, LISTED):
            # One select per rank, in order; or checkboxes, put in option order
            # (as validation stores them) whatever order a shuffled page sent,
            # so the page's path is the one validation walks.
            chosen = [v for v in posted.getlist(question.key) if isinstance(v, str) and v]
            if isinstance(question, MultipleChoice):
                known = question.values()
                chosen = [v for v in known if v in chosen] + [v for v in chosen if v not in known]
            if chosen:
                answers[question.key] = ",".join(chosen)
            continue
        raw = posted.get(question.key)
        if isinstance(raw, str) and raw.strip():
            answers[question.key] = _typed(question, raw.strip())
    return answers


# The honeypot, a field people never see and bots fill in, is named by two of
# these words in camelCase: a link a bot takes for one to fill, and a name no
# answer can have (keys, rows and `_other` fields are lower case, KEY_PATTERN),
# whatever the form asks. None is a kind of field browsers fill in by
# themselves (a name, an address, a company): a person never fills it unseen.
_HONEYPOT_WORDS = (
    ("home", "web", "blog", "site", "link", "portfolio", "profile", "social"),
    ("Url", "Link", "Page", "Site"),
)


def honeypot(box: SecretBox | None, form_id: str) -> str:
    """The name of the form's honeypot field, the same on every page of it:
    chosen by the service's secret key (kit.secretbox), so no list in the
    docs tells a bot which field to leave empty; without a key, by the
    form's id alone."""
    message = f"formsapi honeypot:{form_id}"
    chosen = box.sign(message.encode()) if box is not None else message
    number = int.from_bytes(hashlib.sha256(chosen.encode()).digest()[:4])
    first, second = _HONEYPOT_WORDS
    return first[number % len(first)] + second[number // len(first) % len(second)]


def is_spam(posted: Posted, honeypot: str) -> bool:
    """Whether the post filled in the honeypot named `honeypot`."""
    return bool(posted.get(honeypot))


# Pages, recall and endings.


def carried_from(form: Compiled, source: Posted, *, prefill: bool) -> dict[str, Any]:
    """Hidden fields (and, from a link, prefilled questions) in `source`:
    only those the form declares, as text of bounded length."""
    keys = [field.key for field in form.definition.hidden_fields]
    if prefill:
        keys += [q.key for q in questions(form.blocks) if q.prefill]
    found: dict[str, Any] = {}
    for key in keys:
        value = source.get(key)
        if isinstance(value, str) and value and len(value) <= HIDDEN_VALUE_MAX:
            found[key] = value
    return found


@dataclass(frozen=True, slots=True)
class Step:
    """One page of a form as a respondent sees it now."""

    page: int  # its index among the form's pages
    number: int  # its place on the path so far, from 1
    total: int  # pages on the path the answers so far lead along
    blocks: list[Block]  # the page's blocks, their text recalled
    positions: list[int]  # each one's place in the form
    hidden: frozenset[int]  # those the logic hides for the answers so far
    carried: list[tuple[str, str]]  # earlier answers and hidden fields, as hidden inputs
    required: frozenset[str]  # keys of the questions required here, requiredIf included
    seed: str  # orders shuffled options for this respondent
    live: str  # JSON for the page's script: the rules it can apply as answers change
    first: bool
    last: bool


def step(form: Compiled, answers: dict[str, Any], page: int, run: flow.Run, seed: str = "") -> Step:
    """The page `page` as the answers so far show it (`run`, their walk):
    which blocks, their recalled text, and the earlier answers to carry
    along. Options a block shuffles come in an order of this respondent's
    (`seed`), the same on every page they see."""
    layout = form.layout
    path = run.pages if page in run.pages else [*run.pages[:1], page]
    here = path.index(page)
    values = recall_values(form, answers, run.variables)
    positions = [
        position
        for position in layout.page_positions(page)
        if not isinstance(layout.blocks[position], PageBreak)
    ]
    shown = [_shuffled(_recalled(layout.blocks[p], values), seed) for p in positions]
    on_page = page_keys(form, page)
    carried = [
        (key, item)
        for key, value in answers.items()
        if key not in on_page
        for item in (value.split(",") if _is_multiple(layout, key) else [value])
    ]
    return Step(
        page=page,
        number=here + 1,
        total=len(path),
        blocks=shown,
        positions=positions,
        hidden=frozenset(p for p in positions if p not in run.shown),
        carried=[(key, str(value)) for key, value in carried],
        required=frozenset(run.required),
        seed=seed,
        live=_live(form, answers, page, run),
        first=here == 0,
        last=here == len(path) - 1,
    )


def _live(form: Compiled, answers: dict[str, Any], page: int, run: flow.Run) -> str:
    """What the page's script needs to show and hide this page's blocks as
    the respondent answers, as the server will decide on the post: the
    page's blocks in order, each with its answer keys and its condition (one
    that reads a variable is left to the server), and the answers before
    this page as rules read them. Escaped for a <script> element."""
    layout = form.layout
    hidden = {field.key for field in layout.definition.hidden_fields}
    earlier = [
        key
        for key, position in layout.positions.items()
        if position in run.shown and layout.page_of(position) != page
    ]
    carried = flow.rule_data(layout, answers, hidden | set(earlier))
    for key in [k for k in carried if "." in k]:  # a matrix's rows, nested as rules read them
        head, _, row = key.partition(".")
        carried.setdefault(head, {})[row] = carried.pop(key)
    blocks = []
    for position in layout.page_positions(page):
        block = layout.blocks[position]
        if isinstance(block, PageBreak):
            continue
        condition = getattr(block, "visible_if", None)
        if condition is not None and logic.reads_variables(condition):
            condition = None
        keys = (
            [[key, _kind(part)] for key, part in block.parts()]
            if isinstance(block, QUESTION_TYPES)
            else []
        )
        blocks.append({"position": position, "keys": keys, "visibleIf": condition})
    document = json.dumps({"blocks": blocks, "carried": carried}, separators=(",", ":"))
    return document.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _kind(part: Any) -> str:
    """How the script reads an answer: a number, a list, or text."""
    if isinstance(part, NUMERIC):
        return "number"
    if isinstance(part, LISTED):
        return "list"
    return "text"


def _is_multiple(layout: Layout, key: str) -> bool:
    position = layout.positions.get(key)
    return position is not None and isinstance(layout.blocks[position], LISTED)


def neighbour(run: flow.Run, page: int, by: int) -> int | None:
    """The page before (-1) or after (+1) this one on the path the answers
    took (`run`); None after the last (the form is done)."""
    pages = run.pages
    if page not in pages:
        return 0  # a page the answers no longer lead to: start over from the first
    index = pages.index(page) + by
    if index < 0:
        return pages[0]
    return pages[index] if index < len(pages) else None


def on_path(form: Compiled, answers: dict[str, Any], run: flow.Run) -> dict[str, Any]:
    """The answers the path they take (`run`) reaches: a changed answer can
    leave earlier answers on pages no longer taken, which are dropped, not
    refused."""
    layout = form.layout
    shown = run.shown_keys(layout)
    hidden = {field.key for field in layout.definition.hidden_fields}
    return {key: value for key, value in answers.items() if key in shown or key in hidden}


def page_keys(form: Compiled, page: int) -> set[str]:
    layout = form.layout
    return {
        key
        for position in layout.page_positions(page)
        if isinstance(block := layout.blocks[position], QUESTION_TYPES)
        for key, _ in block.parts()
    }


def recall_values(
    form: Compiled, answers: dict[str, Any], variables: dict[str, Any]
) -> dict[str, str]:
    """What recall shows for each name: a choice's label, numbers as written."""
    values: dict[str, str] = {}
    asked = {question.key: question for question in questions(form.blocks)}
    for key, value in answers.items():
        question = asked.get(key)
        if isinstance(question, (SingleChoice, *LISTED)):
            labels = {option.value: option.label for option in question.options}
            values[key] = ", ".join(labels.get(v, v) for v in str(value).split(","))
        else:
            values[key] = logic.to_string(value)
    for name, value in variables.items():
        values[f"vars.{name}"] = logic.to_string(value)
    return values


def recall(text: str, values: dict[str, str], *, encode: bool = False) -> str:
    """`{{name}}` and `{{name|fallback}}` replaced by what `values` holds
    (the page escapes the result; a redirect gets it URL-encoded). Shown on
    a page, a value is cut at RECALL_SHOWN characters: what a page draws
    stays within what the form's cost counted."""

    def value(found: re.Match[str]) -> str:
        shown = values.get(found.group(1)) or (found.group(2) or "").strip()
        if encode:
            return quote(shown, safe="")
        return shown if len(shown) <= RECALL_SHOWN else shown[: RECALL_SHOWN - 1] + "…"

    return RECALL.sub(value, text)


def _recalled(block: Block, values: dict[str, str]) -> Block:
    changes: dict[str, Any] = {}
    for field in ("title", "description", "text"):
        text = getattr(block, field, None)
        if text and "{{" in text:
            changes[field] = recall(text, values)
    options = getattr(block, "options", None)
    if options and any("{{" in option.label for option in options):
        changes["options"] = [
            option.model_copy(update={"label": recall(option.label, values)}) for option in options
        ]
    return block.model_copy(update=changes) if changes else block


def new_seed() -> str:
    return secrets.token_hex(8)


def seed_of(posted: Posted) -> str:
    seed = posted.get("_seed")
    return seed if isinstance(seed, str) and re.fullmatch(r"[0-9a-f]{16}", seed) else new_seed()


def _shuffled(block: Block, seed: str) -> Block:
    order = getattr(block, "shuffle", None)
    if order not in ("all", "all_but_last") or not seed:
        return block
    options = list(block.options)  # type: ignore[union-attr]
    kept = [options.pop()] if order == "all_but_last" else []
    random.Random(f"{seed}:{block.key}").shuffle(options)  # type: ignore[union-attr]  # noqa: S311
    return block.model_copy(update={"options": options + kept})


def ending_of(form: Compiled, key: str | None) -> Ending | None:
    return form.layout.endings.get(key) if key else None
