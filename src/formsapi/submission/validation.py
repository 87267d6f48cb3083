"""Answers checked against the form's blocks, every error at once.

The rules are the blocks' own (`check_answer` beside `answer_schema`), so the
server accepts exactly what the published JSON Schema describes.
"""

from dataclasses import dataclass
from typing import Any

from formsapi.form.blocks import Answer, Block, questions


@dataclass(frozen=True, slots=True)
class FieldError:
    pointer: str  # RFC 6901, from the request body: /answers/<key>
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "detail": self.detail}


def _pointer(key: str) -> str:
    return "/answers/" + key.replace("~", "~0").replace("/", "~1")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_answers(
    blocks: list[Block], answers: dict[str, Any]
) -> tuple[dict[str, Answer], list[FieldError]]:
    """The answers as they will be stored (normalized), and every error."""
    asked = {question.key: question for question in questions(blocks)}
    stored: dict[str, Answer] = {}
    errors = [
        FieldError(_pointer(key), "is not a question of this form")
        for key in answers
        if key not in asked
    ]
    for key, question in asked.items():
        if key not in answers:
            if question.required:
                errors.append(FieldError(_pointer(key), "is required"))
            continue
        value = answers[key]
        if value is None:
            # Answers are strings or numbers, as the schema says; no null.
            errors.append(
                FieldError(
                    _pointer(key), "must not be null; leave the key out when there is no answer"
                )
            )
            continue
        if isinstance(value, str) and ("\x00" in value or not _encodable(value)):
            errors.append(
                FieldError(
                    _pointer(key),
                    "must not contain NUL characters"
                    if "\x00" in value
                    else "must be valid Unicode text",
                )
            )
            continue
        normalized, problem = question.check_answer(value)
        if problem:
            errors.append(FieldError(_pointer(key), problem))
        else:
            stored[key] = normalized
    return stored, errors
