"""The server's rule evaluator and json-logic-js (with our operators, as the
hosted page loads them) give the same answers: the table of
tests/language/test_logic.py and thousands of generated rules, run through both.
Needs Node and `npm ci --prefix frontend` (which .ci/run does)."""

import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from formsapi.language import logic
from tests.language.test_logic import DATA, EVALUATED, TODAY

FRONTEND = Path(__file__).parents[2] / "frontend"


def _node() -> str:
    node = shutil.which("node")
    ready = node is not None and (FRONTEND / "node_modules" / "json-logic-js").is_dir()
    if not ready:
        if os.environ.get("CI"):
            pytest.fail("Node and frontend/node_modules are needed (npm ci --prefix frontend)")
        pytest.skip("Node or frontend/node_modules missing (npm ci --prefix frontend)")
    assert node is not None
    return node


def _spelled(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {
            "number": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        }
    if isinstance(value, list):
        return [_spelled(item) for item in value]
    return value


def _in_browser(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [_node(), str(FRONTEND / "parity.mjs")],
        input=json.dumps({"today": TODAY.isoformat(), "cases": cases}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


VALUES: list[Any] = [
    None, True, False, 0, 1, -2, 2.5, 1e21, "", "0", "1", "12", " 7 ", "abc", "1e3", "0x1A",
    "2026-02-28", "2024-02-29", "Ada", "né😀", ["red", "blue"], [], ["1"],
]  # fmt: skip
KEYS = ["a", "b", "c", "d"]
BINARY = ["==", "!=", "===", "!==", "<", "<=", ">", ">=", "/", "%", "in", "-",
          "add_days", "days_between"]  # fmt: skip
MANY = ["+", "*", "min", "max", "cat", "and", "or", "if", "missing"]
ONE = ["!", "!!", "length", "-"]


def _rule(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.3:
        if rng.random() < 0.5:
            return {"var": rng.choice(KEYS)}
        return rng.choice(VALUES)
    kind = rng.random()
    if kind < 0.5:
        operator = rng.choice(BINARY)
        arguments = [_rule(rng, depth - 1) for _ in range(2)]
        if operator in ("<", "<=") and rng.random() < 0.2:
            arguments.append(_rule(rng, depth - 1))
        return {operator: arguments}
    if kind < 0.8:
        operator = rng.choice(MANY)
        if operator == "missing":
            return {"missing": rng.sample(KEYS, rng.randint(1, 3))}
        count = rng.randint(2, 4)
        return {operator: [_rule(rng, depth - 1) for _ in range(count)]}
    if rng.random() < 0.1:
        return {"today": []}
    return {rng.choice(ONE): [_rule(rng, depth - 1)]}


def _data(rng: random.Random) -> dict[str, Any]:
    return {key: rng.choice(VALUES) for key in KEYS if rng.random() < 0.85}


def test_the_table_gives_the_same_in_json_logic_js() -> None:
    cases = [{"rule": rule, "data": DATA} for rule, _ in EVALUATED]

    browser = _in_browser(cases)

    for case, result in zip(cases, browser, strict=True):
        server = _spelled(logic.apply(case["rule"], logic.Context(DATA, TODAY)))
        assert result == {"value": server}, case["rule"]


def test_generated_rules_give_the_same_in_json_logic_js() -> None:
    rng = random.Random(26)  # noqa: S311 - test data, not secrets
    cases = [{"rule": _rule(rng, 3), "data": _data(rng)} for _ in range(3000)]

    browser = _in_browser(cases)

    differences = []
    for case, result in zip(cases, browser, strict=True):
        server = _spelled(logic.apply(case["rule"], logic.Context(case["data"], TODAY)))
        if result != {"value": server}:
            differences.append((case, server, result))
    assert differences == []


# Answers as long as a form allows (100,000 characters), which the server
# reads by other paths than short ones (language/logic.py, _LONG).
LONG_VALUES: list[str] = [
    "7" * 100_000,
    " 12" + "0" * 2_000 + " ",
    "-0." + "0" * 1_500 + "25",
    "1" * 900 + "." + "9" * 900 + "e-500",
    "4" * 1_200 + "e-1500",
    "1" + "0" * 2_000 + "1e-2001",
    "Infinity" + "7" * 2_000,
    "0x" + "f" * 2_000,
    "9" * 5_000 + "x",
    "é" * 3_000,
    "é" * 3_000 + "😀",
    "a" * 3_000,
]


def test_long_answers_give_the_same_in_json_logic_js() -> None:
    data = {f"t{i}": text for i, text in enumerate(LONG_VALUES)}
    names = list(data)
    rules: list[Any] = []
    for i, name in enumerate(names):
        other = names[(i + 1) % len(names)]
        rules += [
            {"+": [{"var": name}]},
            {"-": [{"var": name}, 1]},
            {"*": [{"var": name}, 2]},
            {"<": [{"var": name}, {"var": other}]},
            {"<=": [{"var": other}, {"var": name}]},
            {">": [{"var": name}, 1e300]},
            {"==": [{"var": name}, {"var": name}]},
            {"in": ["99x", {"var": name}]},
            {"length": {"cat": [{"var": name}, {"var": other}, "!"]}},
            {"var": f"{name}.length"},
            {"max": [{"var": name}, 0]},
        ]
    cases = [{"rule": rule, "data": data} for rule in rules]

    browser = _in_browser(cases)

    differences = []
    for case, result in zip(cases, browser, strict=True):
        server = _spelled(logic.apply(case["rule"], logic.Context(data, TODAY)))
        if result != {"value": server}:
            differences.append((case["rule"], server, result))
    assert differences == []
