"""Submissions per day as bars of an inline SVG, laid out here so the template
only draws: no JavaScript, no chart library. A phone gets a chart of its own
shape (PHONE): the laptop's, scaled to a phone's width, came out 90 pixels
tall with its labels at 7."""

import math
from dataclasses import dataclass
from datetime import date

WIDTH, HEIGHT = 720, 200
PHONE = 360, 220
LEFT, BOTTOM, TOP = 44, 22, 8  # room for the axis labels


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: date
    count: int


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    y_ticks: list[tuple[float, str]]  # (y, label)
    x_labels: list[tuple[float, str]]  # (x, label)
    total: int
    busiest: Bar | None
    baseline: float


def _nice_ceiling(value: int) -> int:
    """1, 2 or 5 times a power of ten, at least `value`: round gridlines."""
    if value <= 0:
        return 1
    power: int = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def daily_bars(days: list[tuple[date, int]], width: int = WIDTH, height: int = HEIGHT) -> Chart:
    top = _nice_ceiling(max((count for _, count in days), default=0))
    plot_width, plot_height = width - LEFT, height - BOTTOM - TOP
    slot = plot_width / max(1, len(days))
    baseline = TOP + plot_height
    bars = [
        Bar(
            x=round(LEFT + index * slot + slot * 0.1, 2),
            y=round(baseline - count / top * plot_height, 2),
            width=round(slot * 0.8, 2),
            height=round(count / top * plot_height, 2),
            day=day,
            count=count,
        )
        for index, (day, count) in enumerate(days)
    ]
    ticks: list[tuple[float, str]] = []
    for fraction in (0, 0.5, 1):
        value = top * fraction  # half of a top of 5 is 2.5: labelled so, not 2
        if value != int(value) and top < 5:
            continue  # no line at half a submission
        label = f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"
        ticks.append((round(baseline - fraction * plot_height, 2), label))
    labels = [
        (bar.x + bar.width / 2, bar.day.strftime("%b %-d"))
        for index, bar in enumerate(bars)
        if bar.day.day == 1 or index == 0
    ]
    if len(labels) > 1 and labels[1][0] - labels[0][0] < plot_width * 0.15:
        labels.pop(0)  # the first day sits too close to the next month's label
    busiest = max(bars, key=lambda bar: bar.count, default=None)
    return Chart(
        width=width,
        height=height,
        bars=bars,
        y_ticks=ticks,
        x_labels=labels,
        total=sum(count for _, count in days),
        busiest=busiest if busiest and busiest.count else None,
        baseline=baseline,
    )
