"""A form's answer summary, figured from tallies: how many submissions gave
each answer key each value. The tallies come from the database (one
statement, summary.repository); everything a question type shows (counts per
option, distributions, means, quantiles, NPS, mean ranks) is worked out here
from them, exactly, with no database in sight."""

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from math import floor
from typing import Any

from formsapi.language.blocks import (
    OTHER,
    Block,
    Matrix,
    MultipleChoice,
    Nps,
    Number,
    Question,
    Ranking,
    Rating,
    Scale,
    SingleChoice,
    YesNo,
    questions,
)
from formsapi.language.compiled import VARIABLE_PREFIX
from formsapi.language.definition import Definition

# The quantiles a number question reports, as percentages.
QUANTILES = (10, 25, 50, 75, 90)
# A variable's distribution lists at most this many values, the most frequent.
MAX_VALUES = 200

Value = str | int | float


@dataclass
class Tallies:
    """What one statement counted over the matching submissions."""

    submissions: int = 0
    # Submissions that hold each answer key.
    answered: Counter[str] = field(default_factory=Counter)
    # Of those, per value, for the keys whose values are counted (valued_keys).
    values: dict[str, Counter[Value]] = field(default_factory=dict)
    # Submissions per ending key (None: the form had no ending).
    endings: Counter[str | None] = field(default_factory=Counter)


def summarize(blocks: list[Block], definition: Definition, tallies: Tallies) -> dict[str, Any]:
    """The summary document (camelCase, as the API returns it)."""
    return {
        "submissions": tallies.submissions,
        "questions": [_question(q, tallies) for q in questions(blocks)],
        "variables": [
            _variable(variable.name, variable.type, tallies) for variable in definition.variables
        ],
        "endings": _endings(definition, tallies),
    }


def _base(question: Question, tallies: Tallies, key: str | None = None) -> dict[str, Any]:
    answered = tallies.answered[key or question.key]
    return {
        "key": question.key,
        "type": question.type,
        "title": question.title,
        "answered": answered,
        "skipped": tallies.submissions - answered,
    }


def _question(question: Question, tallies: Tallies) -> dict[str, Any]:
    values = tallies.values.get(question.key, Counter())
    if isinstance(question, Matrix):
        return _matrix(question, tallies)
    figures = _base(question, tallies)
    if isinstance(question, Ranking):
        figures["ranks"] = _ranks(question, values)
    elif isinstance(question, MultipleChoice):
        chosen: Counter[Value] = Counter()
        for joined, count in values.items():
            for value in str(joined).split(","):
                chosen[value] += count
        figures["options"] = _options(question.options, chosen, question.allow_other)
    elif isinstance(question, SingleChoice):  # dropdowns too
        figures["options"] = _options(question.options, values, question.allow_other)
    elif isinstance(question, YesNo):
        figures["options"] = [{"value": v, "count": values[v]} for v in ("yes", "no")]
    elif isinstance(question, Rating | Scale | Nps):
        low, high = (1, question.scale) if isinstance(question, Rating) else question.bounds()
        numbers = _numeric(values)
        figures["distribution"] = [
            {"value": point, "count": numbers[point]} for point in range(low, high + 1)
        ]
        figures["mean"] = _mean(numbers)
        figures["median"] = _quantile(numbers, 50)
        if isinstance(question, Nps):
            figures["nps"] = _nps(numbers)
    elif isinstance(question, Number):
        numbers = _numeric(values)
        figures.update(_statistics(numbers))
    return figures


def _options(
    options: Iterable[Any], counts: Mapping[Value, int], allow_other: bool | None
) -> list[dict[str, Any]]:
    listed = [
        {"value": o.value, "label": o.label, "count": counts.get(o.value, 0)} for o in options
    ]
    if allow_other:
        listed.append({"value": OTHER, "label": "Other", "count": counts.get(OTHER, 0)})
    return listed


def _ranks(question: Ranking, orders: Mapping[Value, int]) -> list[dict[str, Any]]:
    """Each option's mean position (1 = most preferred) over the answers."""
    rank_sums: Counter[str] = Counter()
    firsts: Counter[str] = Counter()
    answers = 0
    for joined, count in orders.items():
        ranked = str(joined).split(",")
        answers += count
        firsts[ranked[0]] += count
        for position, value in enumerate(ranked, start=1):
            rank_sums[value] += position * count
    return [
        {
            "value": option.value,
            "label": option.label,
            "meanRank": rank_sums[option.value] / answers if answers else None,
            "first": firsts[option.value],
        }
        for option in question.options
    ]


def _matrix(question: Matrix, tallies: Tallies) -> dict[str, Any]:
    """Per row, how many chose each column."""
    rows = []
    for row in question.rows:
        key = f"{question.key}.{row.value}"
        counts = tallies.values.get(key, Counter())
        rows.append(
            {
                "value": row.value,
                "label": row.label,
                "answered": tallies.answered[key],
                "columns": [
                    {"value": c.value, "label": c.label, "count": counts.get(c.value, 0)}
                    for c in question.columns
                ],
            }
        )
    # Answered: the submissions that answered at least one row.
    return {**_base(question, tallies), "rows": rows}


def _variable(name: str, kind: str, tallies: Tallies) -> dict[str, Any]:
    values = tallies.values.get(VARIABLE_PREFIX + name, Counter())
    figures: dict[str, Any] = {"name": name, "type": kind}
    if kind == "number":
        numbers = _numeric(values)
        shown = sorted(numbers.items(), key=lambda item: (-item[1], item[0]))[:MAX_VALUES]
        figures["distribution"] = [{"value": v, "count": c} for v, c in sorted(shown)]
        figures.update(_statistics(numbers))
    else:
        texts = Counter({str(v): c for v, c in values.items()})
        figures["distribution"] = [
            {"value": v, "count": c}
            for v, c in sorted(texts.items(), key=lambda item: (-item[1], item[0]))[:MAX_VALUES]
        ]
    figures["distinctValues"] = len(values)
    return figures


def _endings(definition: Definition, tallies: Tallies) -> list[dict[str, Any]]:
    listed = [
        {"key": ending.key, "title": ending.title, "count": tallies.endings[ending.key]}
        for ending in definition.endings
    ]
    known = {ending.key for ending in definition.endings}
    # Endings a later version removed still count what reached them.
    listed.extend(
        {"key": key, "title": None, "count": count}
        for key, count in sorted(tallies.endings.items(), key=lambda item: str(item[0]))
        if key is not None and key not in known
    )
    return listed


def _numeric(values: Mapping[Value, int]) -> Counter[float]:
    """The counts of the values that are numbers (an answer stored before a
    question was retyped may not be)."""
    numbers: Counter[float] = Counter()
    for value, count in values.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            numbers[value] += count
    return numbers


def _statistics(numbers: Counter[float]) -> dict[str, Any]:
    total = sum(value * count for value, count in numbers.items())
    return {
        "min": min(numbers) if numbers else None,
        "max": max(numbers) if numbers else None,
        "mean": _mean(numbers),
        "sum": total,
        "quantiles": {f"p{p}": _quantile(numbers, p) for p in QUANTILES},
    }


def _mean(numbers: Counter[float]) -> float | None:
    count = sum(numbers.values())
    return sum(value * n for value, n in numbers.items()) / count if count else None


def _quantile(numbers: Counter[float], percent: int) -> float | None:
    """The p-th percentile with linear interpolation between the two nearest
    answers (PostgreSQL's percentile_cont, NumPy's default): the median of
    1, 2, 3, 4 is 2.5."""
    count = sum(numbers.values())
    if not count:
        return None
    position = (count - 1) * percent / 100
    below = floor(position)
    low = _nth(numbers, below)
    if position == below:
        return low
    high = _nth(numbers, below + 1)
    return low + (high - low) * (position - below)


def _nth(numbers: Counter[float], index: int) -> float:
    """The value at `index` (from 0) of the answers in ascending order."""
    seen = 0
    for value in sorted(numbers):
        seen += numbers[value]
        if index < seen:
            return value
    raise IndexError(index)


def _nps(numbers: Counter[float]) -> dict[str, Any]:
    """Promoters answer 9 or 10, passives 7 or 8, detractors 0 to 6; the
    score is the promoters' share minus the detractors', in points (-100 to 100)."""
    promoters = sum(c for v, c in numbers.items() if v >= 9)
    passives = sum(c for v, c in numbers.items() if 7 <= v < 9)
    detractors = sum(c for v, c in numbers.items() if v < 7)
    answers = promoters + passives + detractors
    return {
        "score": round((promoters - detractors) * 100 / answers, 1) if answers else None,
        "promoters": promoters,
        "passives": passives,
        "detractors": detractors,
    }
