"""Answers checked against the form's blocks, every error at once.

The rules are the blocks' own (`check_answer` beside `answer_schema`), so the
server accepts exactly what the published JSON Schema describes.
"""

from dataclasses import dataclass
from datetime import date
from typing import Any

from formsapi.language import flow
from formsapi.language.blocks import OTHER, Answer, Block, OtherText, Part, parts
from formsapi.language.compiled import Compiled
from formsapi.language.definition import HIDDEN_VALUE_MAX


@dataclass(frozen=True, slots=True)
class FieldError:
    pointer: str  # RFC 6901, from the request body: /answers/<key>
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "detail": self.detail}


def answer_pointer(key: str) -> str:
    """The JSON pointer (RFC 6901) of an answer in a request's body."""
    return "/answers/" + key.replace("~", "~0").replace("/", "~1")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_answers(
    blocks: list[Block], answers: dict[str, Any], *, required: bool = True
) -> tuple[dict[str, Answer], list[FieldError]]:
    """The answers as they will be stored (normalized), and every error."""
    asked = dict(parts(blocks))
    stored: dict[str, Answer] = {}
    errors = [
        FieldError(answer_pointer(key), "is not a question of this form")
        for key in answers
        if key not in asked
    ]
    for key, question in asked.items():
        if key not in answers:
            if question.required and required:
                errors.append(FieldError(answer_pointer(key), "is required"))
            continue
        value = answers[key]
        if value is None:
            # Answers are strings or numbers, as the schema says; no null.
            errors.append(
                FieldError(
                    answer_pointer(key),
                    "must not be null; leave the key out when there is no answer",
                )
            )
            continue
        if isinstance(value, str) and ("\x00" in value or not _encodable(value)):
            errors.append(
                FieldError(
                    answer_pointer(key),
                    "must not contain NUL characters"
                    if "\x00" in value
                    else "must be valid Unicode text",
                )
            )
            continue
        normalized, problem = question.check_answer(value)
        if problem:
            errors.append(FieldError(answer_pointer(key), problem))
        else:
            stored[key] = normalized
    errors += _other_errors(asked, stored, answers)
    return stored, errors


def _other_errors(
    asked: dict[str, Part], stored: dict[str, Answer], answers: dict[str, Any]
) -> list[FieldError]:
    """Other's text comes with Other chosen, and only then."""
    errors = []
    for key, part in asked.items():
        if not isinstance(part, OtherText):
            continue
        choice = part.choice
        chosen = str(stored.get(choice.key, "")).split(",")
        if OTHER in chosen and key not in answers:
            errors.append(FieldError(answer_pointer(key), "is required when Other is chosen"))
        elif (
            key in stored
            and OTHER not in chosen
            and (choice.key in stored or choice.key not in answers)
        ):
            errors.append(FieldError(answer_pointer(key), "is only for Other, which is not chosen"))
    return errors


@dataclass(frozen=True, slots=True)
class Checked:
    """Answers as they will be stored (with hidden fields and `vars.*`),
    the ending reached, and every error."""

    stored: dict[str, Any]
    ending: str | None
    errors: list[FieldError]


def validate_submission(form: Compiled, answers: dict[str, Any], today: date) -> Checked:
    """Answers checked against the form's blocks and logic, as the server
    decides: a question the logic hides is neither required nor answerable,
    and variables are computed here, never taken from the client."""
    if not form.has_logic:
        plain, found = validate_answers(form.blocks, answers)
        return Checked(plain, None, found)
    layout = form.layout
    hidden = {field.key for field in layout.definition.hidden_fields}
    asked = dict(parts(form.blocks))
    errors: list[FieldError] = []
    given: dict[str, Any] = {}
    for key, value in answers.items():
        if key.startswith("vars."):
            errors.append(
                FieldError(answer_pointer(key), "is computed by the server; leave it out")
            )
        elif key in hidden:
            if isinstance(value, str) and len(value) <= HIDDEN_VALUE_MAX and _clean(value):
                given[key] = value
            else:
                errors.append(
                    FieldError(
                        answer_pointer(key),
                        f"is a hidden field: text of at most {HIDDEN_VALUE_MAX} characters",
                    )
                )
        elif key not in asked:
            errors.append(FieldError(answer_pointer(key), "is not a question of this form"))
    checked, problems = validate_answers(
        form.blocks, {k: v for k, v in answers.items() if k in asked}, required=False
    )
    errors += problems
    given.update(checked)
    run = flow.walk(layout, given, today)
    shown = run.shown_keys(layout)
    if errors:
        # What the logic hides or requires depends on these answers: it is
        # told once they are right, rather than as errors that follow from them.
        return Checked({}, None, errors)
    for key in checked:
        if key not in shown:
            errors.append(
                FieldError(
                    answer_pointer(key),
                    "is hidden by the form's logic for these answers; leave it out",
                )
            )
    for key in sorted(run.required - set(given), key=layout.positions.__getitem__):
        errors.append(FieldError(answer_pointer(key), "is required"))
    stored = {
        **{k: v for k, v in given.items() if k in hidden or k in shown},
        **{f"vars.{name}": value for name, value in run.variables.items()},
    }
    return Checked(stored, run.ending, errors)


def _clean(text: str) -> bool:
    return "\x00" not in text and _encodable(text)
