"""Answers are checked against the blocks: what the server accepts, the form's
published JSON Schema accepts too, and every error is reported at once."""

import random
from typing import Any

import jsonschema
import pytest

from formsapi import demo
from formsapi.demo.data import TEMPLATES
from formsapi.language.blocks import BlockList, answers_schema
from formsapi.submission.validation import validate_answers

BLOCKS = BlockList.validate_python(
    [
        {"type": "short_text", "key": "name", "title": "Name", "required": True, "maxLength": 5},
        {"type": "long_text", "key": "notes", "title": "Notes", "minLength": 3},
        {"type": "email", "key": "email", "title": "Email"},
        {"type": "url", "key": "site", "title": "Site"},
        {"type": "phone", "key": "phone", "title": "Phone"},
        {"type": "number", "key": "age", "title": "Age", "min": 0, "max": 130, "integer": True},
        {"type": "number", "key": "ratio", "title": "Ratio", "min": -1.5, "max": 1.5},
        {"type": "rating", "key": "stars", "title": "Stars", "scale": 5},
        {
            "type": "single_choice",
            "key": "plan",
            "title": "Plan",
            "options": [{"value": "free", "label": "Free"}, {"value": "pro", "label": "Pro"}],
        },
        {
            "type": "multiple_choice",
            "key": "tags",
            "title": "Tags",
            "maxSelections": 2,
            "options": [{"value": v, "label": v} for v in ("a", "b", "c")],
        },
        {"type": "date", "key": "day", "title": "Day"},
        {"type": "heading", "text": "Layout blocks take no answers"},
    ]
)
CANDIDATES: list[Any] = [
    "",
    "x",
    "Ada",
    "toolong",
    "ada@example.com",
    "not an email",
    "a@b",
    "https://ex.com/p",
    "ftp://ex.com",
    "https://",
    "+1 555 0100",
    "12",
    "555-0100",
    0,
    1,
    5,
    6,
    -1,
    36,
    36.5,
    130,
    131,
    1.5,
    1.6,
    -1.5,
    True,
    None,
    "free",
    "FREE",
    "a",
    "b,a",
    "a,b",
    "a,b,c",
    "a,a",
    "a,",
    "2026-02-28",
    "2026-02-30",
    "2026-2-3",
    [],
    {},
    "x" * 300,
]


def _validator() -> jsonschema.Draft202012Validator:
    schema = answers_schema(BLOCKS)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


@pytest.mark.parametrize(
    "key",
    ["name", "notes", "email", "site", "phone", "age", "ratio", "stars", "plan", "tags", "day"],
)
def test_what_the_server_accepts_the_schema_accepts(key: str) -> None:
    validator = _validator()
    for value in CANDIDATES:
        answers = {"name": "Ada", key: value}
        stored, errors = validate_answers(BLOCKS, answers)
        if not errors:
            assert validator.is_valid(answers), (key, value)
            assert validator.is_valid(stored), (key, value, stored)


def test_every_demo_answer_is_accepted_unchanged() -> None:
    rng = random.Random(3)  # noqa: S311 - test data
    for _, _, raw in TEMPLATES:
        blocks = BlockList.validate_python(raw)
        for _ in range(200):
            answers = demo.answers_for(blocks, rng)
            stored, errors = validate_answers(blocks, answers)
            assert errors == [], (answers, errors)
            assert stored == answers


def test_every_error_is_reported_with_its_pointer() -> None:
    stored, errors = validate_answers(
        BLOCKS,
        {
            "notes": "hi",
            "email": "nope",
            "age": 36.5,
            "stars": 6,
            "plan": "gold",
            "tags": "a,b,c",
            "day": "2026-02-30",
            "colour": "red",
            "site": "ftp://x",
        },
    )

    assert {error.pointer: error.detail for error in errors} == {
        "/answers/colour": "is not a question of this form",
        "/answers/name": "is required",
        "/answers/notes": "must be at least 3 characters",
        "/answers/email": "must be an email address such as ada@example.com",
        "/answers/site": "must be an http(s) URL such as https://example.com",
        "/answers/age": "must be a whole number",
        "/answers/stars": "must be a whole number from 1 to 5",
        "/answers/plan": "must be one of: free, pro",
        "/answers/tags": "allows at most 2 options",
        "/answers/day": "must be a date as YYYY-MM-DD",
    }
    assert stored == {}


def test_answers_are_stored_normalized() -> None:
    stored, errors = validate_answers(
        BLOCKS, {"name": "Ada", "tags": "b,a", "age": 36.0, "stars": 4.0}
    )

    assert errors == []
    assert stored == {"name": "Ada", "tags": "a,b", "age": 36, "stars": 4}
    assert isinstance(stored["age"], int)


def test_strings_with_nul_are_refused() -> None:
    _, errors = validate_answers(BLOCKS, {"name": "A\x00a"})

    assert [e.detail for e in errors] == ["must not contain NUL characters"]


def test_booleans_are_not_numbers() -> None:
    _, errors = validate_answers(BLOCKS, {"name": "Ada", "age": True, "stars": True})

    assert [e.pointer for e in errors] == ["/answers/age", "/answers/stars"]


def test_no_answer_is_a_missing_key_not_null_or_an_empty_choice() -> None:
    # The schema admits neither, so neither does the server.
    _, errors = validate_answers(BLOCKS, {"name": "Ada", "plan": None, "tags": ""})

    assert {e.pointer: e.detail for e in errors} == {
        "/answers/plan": "must not be null; leave the key out when there is no answer",
        "/answers/tags": "needs at least one option; leave the key out when there is no answer",
    }
