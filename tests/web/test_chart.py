"""The form page's bar chart: its y axis names each value once."""

from datetime import date, timedelta

import pytest

from formsapi.web.chart import daily_bars


@pytest.mark.parametrize(
    ("busiest", "labels"),
    [(0, ["0", "1"]), (1, ["0", "1"]), (3, ["0", "2.5", "5"]), (7, ["0", "5", "10"])],
)
def test_the_y_axis_labels_each_value_once(busiest: int, labels: list[str]) -> None:
    today = date(2026, 11, 27)
    days = [(today - timedelta(days=n), busiest if n == 3 else 0) for n in range(90)]

    chart = daily_bars(days)

    assert [label for _, label in chart.y_ticks] == labels
