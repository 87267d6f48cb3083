"""How a form becomes a table people can query: a typed column per question,
named after its key, beside the submission's own fields."""

import re
from dataclasses import dataclass

from formsapi_client.models import Block, FormDetail

# The submission's own fields, first in every form's table.
META = ("submission_id", "submitted_at", "updated_at", "form_version")
# Question types whose answers are numbers or dates; every other is text
# (choices included: a multiple choice is its values joined by commas).
TYPES = {"rating": "integer", "nps": "integer", "scale": "integer", "date": "date"}
IDENTIFIER = re.compile(r"[^a-z0-9_]+")
MAX_NAME = 55  # PostgreSQL cuts identifiers at 63 bytes; room for a suffix


@dataclass(frozen=True)
class Question:
    key: str
    type: str  # text, integer, number or date


def questions(form: FormDetail) -> list[Question]:
    """What the form's answers hold, each with its column type: the
    questions in block order, its hidden fields, its variables (`vars.x`,
    a column `vars_x`)."""
    found = []
    for block in form.blocks:
        key = getattr(block, "key", None)  # layout blocks have none; page breaks' name pages
        if not isinstance(key, str) or getattr(block, "type", None) == "page_break":
            continue
        if getattr(block, "type", None) == "matrix":  # a column per row: key.row
            found += [Question(f"{key}.{row.value}", "text") for row in block.rows]  # type: ignore[union-attr]
        else:
            found.append(Question(key, column_type(block)))
            if getattr(block, "allow_other", None):  # the Other text
                found.append(Question(f"{key}_other", "text"))
    found += [Question(hidden.key, "text") for hidden in form.hidden_fields]
    found += [
        Question(f"vars.{variable.name}", "number" if variable.type == "number" else "text")
        for variable in form.variables
    ]
    return found


def column_type(block: Block) -> str:
    kind = str(getattr(block, "type", ""))
    if kind == "number":
        return "integer" if getattr(block, "integer", False) else "number"
    return TYPES.get(kind, "text")


def identifier(text: str, taken: set[str] | frozenset[str] = frozenset(), prefix: str = "q") -> str:
    """A lower-case SQL name for `text` that needs no quoting and is not in
    `taken`: `Favourite colour!` -> `favourite_colour`, `2fa` -> `q_2fa`."""
    name = IDENTIFIER.sub("_", text.lower()).strip("_")[:MAX_NAME] or prefix
    if not name[0].isalpha():
        name = f"{prefix}_{name}"[:MAX_NAME]
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}_{n}", n + 1
    return unique


def table_name(slug: str, taken: set[str]) -> str:
    return identifier(f"form_{slug}", taken)
