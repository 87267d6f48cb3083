"""A shared report's small counts: a count withheld alone among counts that
add up to a figure shown beside them would be that figure less the others,
so the smallest other is withheld with it, and neither says a bound."""

from typing import Any

from formsapi.web.charts import HBars, Histogram, Withhold, questions


def _choice(kind: str, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "key": "plan",
        "title": "Plan",
        "type": kind,
        "answered": sum(counts.values()),
        "skipped": 0,
        "options": [{"value": v, "label": v.capitalize(), "count": n} for v, n in counts.items()],
    }


def _shown(question: dict[str, Any], k: int) -> list[list[str]]:
    [view] = questions({"questions": [question]}, Withhold(k))
    assert view.table is not None
    return view.table.rows


def test_one_small_option_is_withheld_with_the_next_smallest() -> None:
    rows = _shown(_choice("single_choice", {"team": 30, "business": 20, "free": 2}), k=5)

    # 2 alone would be 52 - 30 - 20: the 20 goes with it.
    assert rows == [
        ["Team", "30", "58%"],
        ["Business", "withheld", "withheld"],
        ["Free", "withheld", "withheld"],
    ]


def test_two_options_in_all_are_both_withheld_and_drawn_as_nothing() -> None:
    question = _choice("yes_no", {"yes": 6, "no": 2})
    [view] = questions({"questions": [question]}, Withhold(5))

    assert view.table is not None
    assert [row[1:] for row in view.table.rows] == [["withheld", "withheld"]] * 2
    assert "6" not in view.alt
    assert isinstance(view.chart, HBars)
    assert "75%" not in str(view.chart)
    assert [bar.width for bar in view.chart.bars] == [0.0, 0.0]


def test_a_multiple_choices_options_add_up_to_nothing_shown_and_stand_alone() -> None:
    rows = _shown(_choice("multiple_choice", {"team": 30, "business": 20, "free": 2}), k=5)

    assert [row[1] for row in rows] == ["30", "20", "fewer than 5"]


def test_a_scales_points_and_a_matrix_rows_columns_are_parts_too() -> None:
    scale = {
        "key": "stars", "title": "Stars", "type": "rating", "answered": 31, "skipped": 0,
        "distribution": [{"value": 1, "count": 1}, {"value": 2, "count": 10},
                         {"value": 3, "count": 20}],
        "mean": 2.6, "median": 3,
    }  # fmt: skip
    matrix = {
        "key": "grid", "title": "Grid", "type": "matrix", "answered": 12, "skipped": 0,
        "rows": [{"value": "price", "label": "Price", "answered": 12, "columns": [
            {"value": "bad", "label": "Bad", "count": 1},
            {"value": "ok", "label": "OK", "count": 5},
            {"value": "good", "label": "Good", "count": 6},
        ]}],
    }  # fmt: skip

    assert [row[1] for row in _shown(scale, k=5)] == ["withheld", "withheld", "20"]
    assert _shown(matrix, k=5) == [["Price", "withheld", "withheld", "6", "12"]]
    # The chart says so over each bar not drawn, as the table does.
    [view] = questions({"questions": [scale]}, Withhold(5))
    assert isinstance(view.chart, Histogram)
    assert [bar.text for bar in view.chart.bars] == ["withheld", "withheld", "20"]


def test_nothing_is_withheld_at_k_one() -> None:
    rows = _shown(_choice("single_choice", {"team": 3, "free": 1}), k=1)

    assert rows == [["Team", "3", "75%"], ["Free", "1", "25%"]]
