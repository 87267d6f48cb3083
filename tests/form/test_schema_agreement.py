"""For forms whose rules JSON Schema can express, a generic validator and
the service agree on every answer set, both ways: what one accepts the other
accepts, and what one refuses the other refuses."""

import random
from datetime import date
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from formsapi.language.blocks import BlockList
from formsapi.language.compiled import Compiled
from formsapi.language.definition import Definition, check
from formsapi.language.schema import answers_schema
from formsapi.submission.validation import validate_submission

CHOICES = [{"value": v, "label": v.title()} for v in ("red", "blue", "green")]
PLANS = [{"value": v, "label": v.title()} for v in ("personal", "business", "school")]
FORMS: dict[str, dict[str, Any]] = {
    "shown and required by answers": {
        "blocks": [
            {"type": "single_choice", "key": "plan", "title": "Plan", "options": PLANS},
            {"type": "number", "key": "size", "title": "Size", "required": True,
             "visibleIf": {"==": [{"var": "plan"}, "business"]}},
            {"type": "short_text", "key": "why", "title": "Why",
             "visibleIf": {"!": {"in": [{"var": "plan"}, ["business", "school"]]}},
             "requiredIf": {">": [{"var": "size"}, 5]}},
            {"type": "rating", "key": "nps", "title": "NPS", "scale": 5,
             "requiredIf": {"or": [{"<=": [{"var": "size"}, 10]},
                                   {"==": [{"var": "plan"}, "school"]}]}},
        ],
        "hiddenFields": [{"key": "campaign"}],
    },
    "multiple choice and chains": {
        "blocks": [
            {"type": "multiple_choice", "key": "colors", "title": "Colors", "options": CHOICES},
            {"type": "short_text", "key": "red_why", "title": "Why red?", "required": True,
             "visibleIf": {"in": ["red", {"var": "colors"}]}},
            {"type": "number", "key": "shade", "title": "Shade",
             "visibleIf": {"and": [{"in": ["blue", {"var": "colors"}]},
                                   {"!=": [{"var": "red_why"}, "x"]}]},
             "requiredIf": {"in": ["green", {"var": "colors"}]}},
            {"type": "single_choice", "key": "again", "title": "Again?", "options": PLANS,
             "visibleIf": {">=": [{"var": "shade"}, 3]}, "required": True},
        ],
    },
}  # fmt: skip
TEXTS: list[Any] = ["Ada", "x", "Bo", "", 7, "b" * 300]
NUMBERS: list[Any] = [0, 3, 6, 11, 2.5, 4, 8, "5", None]


def _value(rng: random.Random, block: dict[str, Any]) -> Any:
    kind = block["type"]
    if kind == "short_text":
        return rng.choice(TEXTS)
    if kind == "number":
        return rng.choice(NUMBERS)
    if kind == "rating":
        return rng.choice([1, 3, 5, 0, 6, "3"])
    values = [o["value"] for o in block["options"]]
    if kind == "single_choice":
        return rng.choice([*values, "purple"])
    picked = rng.sample(values, rng.randint(1, len(values)))
    # Not "red,red": a value chosen twice is refused by the service, and the
    # schema's pattern cannot say so (x-options does); a block's rule, not logic.
    return rng.choice([",".join(picked), "purple", ""])


def _answer_sets(form: dict[str, Any], count: int) -> list[dict[str, Any]]:
    rng = random.Random(len(form["blocks"]))  # noqa: S311 - test data, not secrets
    keys = [b for b in form["blocks"] if "key" in b]
    sets = []
    for _ in range(count):
        answers = {b["key"]: _value(rng, b) for b in keys if rng.random() < 0.6}
        answers = {k: v for k, v in answers.items() if v is not None}
        if form.get("hiddenFields") and rng.random() < 0.3:
            answers["campaign"] = rng.choice(["spring", "x" * 600])
        sets.append(answers)
    return sets


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_generic_validator_and_the_service_agree_both_ways(name: str) -> None:
    form = FORMS[name]
    blocks = BlockList.validate_python(form["blocks"])
    definition = Definition.model_validate({k: v for k, v in form.items() if k != "blocks"})
    assert check(blocks, definition) == []
    schema = answers_schema(blocks, definition)
    assert "x-logic" not in schema  # every rule said in the schema itself
    validator = Draft202012Validator(schema)
    compiled = Compiled(1, blocks, definition)

    disagreements = []
    accepted = refused = 0
    for answers in _answer_sets(form, 1500):
        by_schema = validator.is_valid(answers)
        by_service = not validate_submission(compiled, answers, date(2026, 11, 25)).errors
        accepted += by_service
        refused += not by_service
        if by_schema != by_service:
            disagreements.append((answers, by_schema, by_service))

    assert disagreements[:5] == []
    assert accepted > 50  # both ways exercised
    assert refused > 50


def test_what_json_schema_cannot_say_is_listed_under_x_logic() -> None:
    blocks = BlockList.validate_python(
        [
            {"type": "number", "key": "a", "title": "A"},
            {"type": "number", "key": "b", "title": "B", "required": True,
             "visibleIf": {">": [{"var": "a"}, {"var": "vars.twice"}]}},
            {"type": "page_break", "key": "more"},
            {"type": "short_text", "key": "c", "title": "C", "required": True},
        ]
    )  # fmt: skip
    definition = Definition.model_validate(
        {
            "variables": [{"name": "twice", "value": {"*": [{"var": "a"}, 2]}}],
            "logic": [{"if": {"==": [{"var": "a"}, 1]}, "then": [{"jump": "more", "after": "a"}]}],
        }
    )

    schema = answers_schema(blocks, definition)

    assert schema["required"] == []
    assert schema["x-logic"]["questions"] == {
        "b": {"visibleIf": {">": [{"var": "a"}, {"var": "vars.twice"}]}},
        "c": {"reason": "asked on a page that logic may skip"},
    }
    assert schema["properties"]["vars.twice"]["readOnly"] is True
    assert schema["x-logic"]["rules"][0]["then"] == [{"jump": "more", "after": "a"}]
