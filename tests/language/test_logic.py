"""The rule language, table-driven: what rules give (as json-logic-js
gives them) and which rules are refused on save."""

import math
from datetime import date
from typing import Any

import pytest

from formsapi.language import logic

TODAY = date(2026, 11, 25)
DATA: dict[str, Any] = {
    "name": "Ada",
    "age": 36,
    "zero": 0,
    "colors": ["red", "blue"],  # a multiple-choice answer, as rules see it
    "plan": "business",
    "born": "1990-05-17",
    "empty": "",
    "vars": {"score": 2, "label": "gold"},
}


EVALUATED: list[tuple[Any, Any]] = [
    # Comparisons, JavaScript's loose and strict equality.
    ({"==": [{"var": "age"}, 36]}, True),
    ({"==": [{"var": "age"}, "36"]}, True),  # a number given as text
    ({"===": [{"var": "age"}, "36"]}, False),
    ({"==": [None, None]}, True),
    ({"==": [None, 0]}, False),
    ({"==": [{"var": "missing_key"}, None]}, True),  # a missing answer is null
    ({"==": [True, 1]}, True),
    ({"===": [True, 1]}, False),
    ({"!=": [{"var": "plan"}, "personal"]}, True),
    ({">": [{"var": "age"}, 18]}, True),
    ({"<": [{"var": "missing_key"}, 1]}, True),  # null is 0 to <
    ({"<": [1, {"var": "age"}, 40]}, True),  # between
    ({"<=": [1, 1, 0]}, False),
    ({"<": ["a", "b"]}, True),
    ({"<": ["10", "9"]}, True),  # text with text: by characters
    ({"<": ["10", 9]}, False),  # text with a number: as numbers
    # Membership: option lists and multiple-choice answers.
    ({"in": [{"var": "plan"}, ["business", "enterprise"]]}, True),
    ({"in": ["red", {"var": "colors"}]}, True),
    ({"in": ["re", {"var": "colors"}]}, False),  # a whole value, not a part of one
    ({"in": ["Ad", {"var": "name"}]}, True),  # in text: a part of it
    ({"in": ["x", {"var": "missing_key"}]}, False),
    ({"in": ["", ""]}, False),
    # and, or, not, truthiness.
    ({"and": [True, {"var": "name"}]}, "Ada"),
    ({"or": [{"var": "empty"}, {"var": "zero"}, "fallback"]}, "fallback"),
    ({"!": [{"var": "colors"}]}, False),
    ({"!": [[]]}, True),  # an empty list is false
    ({"!!": ["0"]}, True),  # non-empty text is true
    ({"!!": [{"var": "zero"}]}, False),
    ({"if": [{"var": "missing_key"}, "yes", "no"]}, "no"),
    ({"if": [False, 1, False, 2, 3]}, 3),
    ({"if": [False, 1]}, None),
    # missing, missing_some.
    ({"missing": ["name", "missing_key", "empty"]}, ["missing_key", "empty"]),
    ({"missing_some": [1, ["name", "missing_key"]]}, []),
    ({"missing_some": [2, ["name", "missing_key"]]}, ["missing_key"]),
    # Arithmetic, as JavaScript does it.
    ({"+": [{"var": "vars.score"}, 1]}, 3),
    ({"+": ["3", 4]}, 7),
    ({"+": ["3px", 4]}, 7),  # parseFloat: the number at the start
    ({"+": [0.1, 0.2]}, 0.30000000000000004),
    ({"-": [10, "4"]}, 6),
    ({"-": [5]}, -5),
    ({"*": [{"var": "age"}, 2]}, 72),
    ({"/": [7, 2]}, 3.5),
    ({"/": [1, 0]}, math.inf),
    ({"%": [-7, 3]}, -1),  # the dividend's sign, not Python's
    ({"min": [3, "1", 2]}, 1),
    ({"max": []}, -math.inf),
    ({"cat": ["Hi ", {"var": "name"}, ", ", 1.5, " ", None]}, "Hi Ada, 1.5 "),
    ({"cat": [{"var": "colors"}]}, "red,blue"),
    # Ours: length, match, dates.
    ({"length": [{"var": "name"}]}, 3),
    ({"length": ["né😀"]}, 3),  # characters, not UTF-16 units
    ({"length": [{"var": "colors"}]}, 2),
    ({"length": [{"var": "missing_key"}]}, 0),
    ({"match": [{"var": "name"}, "^[A-Z][a-z]+$"]}, True),
    ({"match": [{"var": "missing_key"}, "."]}, False),
    ({"today": []}, "2026-11-25"),
    ({"add_days": [{"today": []}, -1]}, "2026-11-24"),
    ({"add_days": ["not a date", 1]}, None),
    ({"days_between": [{"var": "born"}, {"today": []}]}, 13341),
    ({">=": [{"days_between": [{"var": "born"}, {"today": []}]}, 18 * 365]}, True),
    # var: paths and defaults.
    ({"var": "vars.label"}, "gold"),
    ({"var": ["missing_key", "default"]}, "default"),
    ({"var": "colors.1"}, "blue"),
    ({"var": "name.length"}, 3),
]


@pytest.mark.parametrize(("rule", "expected"), EVALUATED)
def test_a_rule_gives_what_json_logic_js_gives(rule: Any, expected: Any) -> None:
    assert logic.apply(rule, logic.Context(DATA, TODAY)) == expected


def test_nan_is_what_javascript_gives_for_a_number_from_text() -> None:
    assert math.isnan(logic.apply({"*": ["abc", 2]}, logic.Context(DATA, TODAY)))
    assert math.isnan(logic.apply({"/": [0, 0]}, logic.Context(DATA, TODAY)))


@pytest.mark.parametrize(
    ("number", "text"),
    [(0.1, "0.1"), (100.0, "100"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"),
     (-2.5, "-2.5"), (123456789012345680000.0, "123456789012345680000"), (math.nan, "NaN")],
)  # fmt: skip
def test_numbers_become_text_as_javascript_writes_them(number: float, text: str) -> None:
    assert logic.to_string(number) == text


NAMES = {
    "age": logic.Name("number", 0, None, "'age'"),
    "plan": logic.Name("text", 1, ("personal", "business"), "'plan'"),
    "colors": logic.Name("list", 2, ("red", "blue"), "'colors'"),
    "vars.score": logic.Name("number", None, None, "'vars.score'"),
}


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"==": [{"var": "age"}, 18]}, None),
        ({"==": [{"var": "age"}, "18"]}, None),  # a number as text: JavaScript matches it
        ({"in": ["red", {"var": "colors"}]}, None),
        ({"and": [{"missing": ["age"]}, {"var": "vars.score"}]}, None),
        ({"match": [{"var": "plan"}, "^b"]}, None),
        ({"==": [{"var": "age"}, "old"]}, "a number and text"),
        ({"in": ["green", {"var": "colors"}]}, "not an option"),
        ({"in": [{"var": "plan"}, ["business", "gold"]]}, "not an option"),
        ({"var": "nobody"}, "does not have"),
        ({"var": ""}, "written out"),
        ({"var": [{"cat": ["a", "ge"]}]}, "written out"),
        ({"method": ["x", "toString"]}, "unknown operator"),
        ({"map": [[1], {"var": ""}]}, "unknown operator"),
        ({"==": [1]}, "takes 2 arguments"),
        ({"today": [1]}, "takes 0 arguments"),
        ({"a": 1, "b": 2}, "exactly one operator"),
        ({"match": [{"var": "plan"}, "(?i)b"]}, "(?...)"),
        ({"match": [{"var": "plan"}, "("]}, "RE2"),
        ({"match": [{"var": "plan"}, "\\Abusiness"]}, "browsers do not"),
        ({"match": [{"var": "plan"}, "[[:alpha:]]"]}, "browsers do not"),
        ({"match": [{"var": "plan"}, "\\pL"]}, "browsers do not"),
        ({"match": [{"var": "plan"}, "\\\\A"]}, None),  # an escaped backslash, then A
        ({"match": [{"var": "plan"}, {"var": "plan"}]}, "written as text"),
        ({"==": [{"var": "colors"}, {"var": "age"}]}, None),
    ],
)
def test_rules_are_checked_on_save(rule: Any, problem: str | None) -> None:
    errors = logic.Checker(NAMES, 3, "block 3").check(rule, "/rule")

    if problem is None:
        assert errors == []
    else:
        assert any(problem in detail for _, detail in errors), errors


def test_a_rule_cannot_read_its_own_block_or_a_later_one() -> None:
    errors = logic.Checker(NAMES, 1, "block 1").check({"var": "plan"}, "/blocks/1/visibleIf")

    assert errors == [("/blocks/1/visibleIf/var", "refers to 'plan', which comes after block 1")]
