"""A form's summary as charts: inline SVG laid out here, so the templates
only draw (no script, no chart library: the pages' CSP allows none), each
chart with a sentence for screen readers and the table it is drawn from.

The same layout serves the form's Summary page and its shared report. A
report withholds small counts: with a threshold k, every count under k, and
every figure worked out from fewer than k answers (a share, a mean, a
median, an NPS, a mean rank), reads "fewer than k" and draws nothing, so a
bar's length cannot tell what its label hides. Counts that add up to a
figure shown beside them (a single choice's options, a scale's points, a
matrix row's columns, NPS groups) are withheld together: one withheld alone
would be that figure less the others, so the smallest other goes with it,
and they all read "withheld", without a bound to work one out from.
k = 1 withholds nothing.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

WIDTH = 400  # a question's chart, in its own units: it scales to the card
LABEL_MAX = 48  # characters of an option's label drawn (the table has it all)
VALUE_ROOM = 104  # what a bar leaves at its right for its count and share
TYPE_NAMES = {
    "single_choice": "single choice",
    "multiple_choice": "multiple choice",
    "dropdown": "dropdown",
    "yes_no": "yes/no",
    "rating": "rating",
    "scale": "scale",
    "nps": "NPS",
    "number": "number",
    "ranking": "ranking",
    "matrix": "matrix",
    "short_text": "short text",
    "long_text": "long text",
    "email": "email",
    "url": "URL",
    "phone": "phone",
    "date": "date",
    "time": "time",
    "date_time": "date and time",
    "file": "file upload",
}
NONE = "\u2013"  # an en dash: no figure at all
MINUS = "\u2212"  # as typeset, wider than a hyphen
SERIES = 6  # colours of a matrix row's stacked segments, then they repeat


@dataclass(frozen=True, slots=True)
class Withhold:
    """How counts read: as they are, or under k as "fewer than k"."""

    k: int = 1

    def hides(self, count: int) -> bool:
        return self.k > 1 and count < self.k

    def count(self, count: int) -> str:
        return f"fewer than {self.k:,}" if self.hides(count) else f"{count:,}"

    def share(self, count: int, of: int) -> str:
        """`count`'s share of `of`, unless either is withheld."""
        if not of:
            return NONE
        if self.hides(count) or self.hides(of):
            return "withheld"
        return f"{count * 100 / of:.0f}%"

    def partition(self, counts: list[int]) -> list[str | None]:
        """How each of `counts`, which add up to a figure shown beside them,
        reads when withheld (None: shown)."""
        hidden = [self.hides(count) for count in counts]
        if hidden.count(True) == 1 and len(counts) > 1:
            shown = [index for index, withheld in enumerate(hidden) if not withheld]
            hidden[min(shown, key=counts.__getitem__)] = True
        return ["withheld" if withheld else None for withheld in hidden]

    def figure(self, value: float | None, answers: int, digits: int = 1) -> str:
        """A figure worked out from `answers` answers (a mean, a median)."""
        if self.hides(answers):
            return f"from fewer than {self.k:,}"
        return NONE if value is None else number(value, digits)


def number(value: float, digits: int = 1) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def clip(text: str, limit: int = LABEL_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Table:
    """A chart's figures as a table: what screen readers and small screens read."""

    caption: str
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True, slots=True)
class HBar:
    label: str  # drawn, clipped
    label_y: float
    y: float
    width: float  # 0: withheld or none, nothing drawn
    text: str  # count and share, right of the bars


@dataclass(frozen=True, slots=True)
class HBars:
    height: float
    bars: list[HBar]
    bar_height: float = 14
    kind: str = "hbars"


@dataclass(frozen=True, slots=True)
class VBar:
    x: float
    y: float
    width: float
    height: float
    label: str
    text: str  # the count over the bar
    center: float


@dataclass(frozen=True, slots=True)
class Histogram:
    height: float
    baseline: float
    bars: list[VBar]
    kind: str = "histogram"


@dataclass(frozen=True, slots=True)
class Gauge:
    """A half dial from -100 to 100, filled from the left up to the score."""

    height: float
    track: str  # SVG path of the half circle
    value: str | None  # the filled part; None when withheld or empty
    score: str
    ticks: list[tuple[float, float, str]]  # (x, y, label)
    center_x: float
    score_y: float
    kind: str = "gauge"


@dataclass(frozen=True, slots=True)
class Segment:
    x: float
    width: float
    series: int
    title: str


@dataclass(frozen=True, slots=True)
class StackRow:
    label: str
    label_y: float
    y: float
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class Stacked:
    height: float
    rows: list[StackRow]
    legend: list[tuple[float, float, int, str]]  # (x, y, series, label)
    bar_height: float = 14
    kind: str = "stacked"


@dataclass(frozen=True, slots=True)
class Range:
    """A number question's spread: min to max, the middle half as a box, the median."""

    height: float
    line: tuple[float, float]  # x of min and of max
    box: tuple[float, float]  # x of p25 and of p75
    median: float
    mean: float
    labels: list[tuple[float, str, str]]  # (x, anchor, text)
    kind: str = "range"


Chart = HBars | Histogram | Gauge | Stacked | Range


@dataclass(frozen=True, slots=True)
class Figure:
    label: str
    value: str


@dataclass(slots=True)
class QuestionView:
    key: str
    title: str
    type_name: str
    answered: str
    skipped: str
    chart: Chart | None = None
    alt: str = ""  # the chart's text alternative
    figures: list[Figure] = field(default_factory=list)
    table: Table | None = None


def questions(
    summary: dict[str, Any], withhold: Withhold, leave_out: Iterable[str] = ()
) -> list[QuestionView]:
    """Each question of the summary as it is drawn, but those left out."""
    skipped = set(leave_out)
    return [_question(q, withhold) for q in summary["questions"] if q["key"] not in skipped]


def _question(question: dict[str, Any], withhold: Withhold) -> QuestionView:
    answered = question["answered"]
    view = QuestionView(
        key=question["key"],
        title=question["title"],
        type_name=TYPE_NAMES.get(question["type"], question["type"].replace("_", " ")),
        answered=withhold.count(answered),
        skipped=withhold.count(question["skipped"]),
    )
    drawer = _DRAWERS.get(question["type"])
    if drawer is not None:
        drawer(view, question, withhold)
    return view


def _labelled(option: dict[str, Any]) -> str:
    label = option.get("label")
    return str(label) if label else str(option["value"]).replace("_", " ").capitalize()


def _texts(counts: list[int], withhold: Withhold, parts: bool) -> list[str]:
    """How each count reads: withheld together when they are parts of a
    figure shown beside them, else each as Withhold.count."""
    together = withhold.partition(counts) if parts else [None] * len(counts)
    return [
        kept if kept is not None else withhold.count(count)
        for count, kept in zip(counts, together, strict=True)
    ]


def _shown(text: str, count: int) -> bool:
    return text == f"{count:,}"


def hbars(items: list[tuple[str, int]], of: int, withhold: Withhold, parts: bool = False) -> HBars:
    """Horizontal bars, a label over each, its count and share (of `of`) at
    its end; with `parts`, the counts add up to `of` (Withhold.partition)."""
    texts = _texts([count for _, count in items], withhold, parts)
    top = max((c for (_, c), t in zip(items, texts, strict=True) if _shown(t, c)), default=0)
    room = WIDTH - VALUE_ROOM
    bars = []
    for index, ((label, count), text) in enumerate(zip(items, texts, strict=True)):
        y = index * 40 + 18
        shown = _shown(text, count)
        width = round(count / top * room, 2) if shown and top else 0.0
        text += f" · {withhold.share(count, of)}" if shown else ""
        bars.append(HBar(clip(label), y - 4, y, width, text))
    return HBars(height=len(items) * 40 + 4, bars=bars)


def _options(view: QuestionView, question: dict[str, Any], withhold: Withhold) -> None:
    options = [(_labelled(o), o["count"]) for o in question["options"]]
    answered = question["answered"]
    # A multiple choice's options are chosen apart: they add up to no figure shown.
    parts = question["type"] != "multiple_choice"
    texts = _texts([n for _, n in options], withhold, parts)
    view.chart = hbars(options, answered, withhold, parts)
    view.alt = f"Bar chart of {len(options)} options: " + "; ".join(
        f"{label} {text}" for (label, _), text in zip(options, texts, strict=True)
    )
    view.table = Table(
        f"{view.title}: answers per option",
        ["Option", "Answers", "Share of those who answered"],
        [
            [label, text, withhold.share(n, answered) if _shown(text, n) else "withheld"]
            for (label, n), text in zip(options, texts, strict=True)
        ],
    )


def histogram(items: list[tuple[str, int]], withhold: Withhold, height: float = 170) -> Histogram:
    """Vertical bars, one per point of a scale (parts of those who answered),
    its count over it."""
    baseline = height - 22
    plot = baseline - 18
    texts = _texts([count for _, count in items], withhold, parts=True)
    top = max((c for (_, c), t in zip(items, texts, strict=True) if _shown(t, c)), default=0)
    slot = WIDTH / max(1, len(items))
    bars = []
    for index, ((label, count), text) in enumerate(zip(items, texts, strict=True)):
        tall = round(count / top * plot, 2) if _shown(text, count) and top else 0.0
        x = round(index * slot + slot * 0.12, 2)
        # "withheld" fits over a bar of a scale of up to 6 points; a dash over more.
        shown = f"{count:,}" if _shown(text, count) else "withheld" if slot >= 60 else NONE
        bars.append(
            VBar(x, round(baseline - tall, 2), round(slot * 0.76, 2), tall, label, shown,
                 round(index * slot + slot / 2, 2))
        )  # fmt: skip
    return Histogram(height=height, baseline=baseline, bars=bars)


def _scale(view: QuestionView, question: dict[str, Any], withhold: Withhold) -> None:
    points = [(number(d["value"]), d["count"]) for d in question["distribution"]]
    answered = question["answered"]
    view.chart = histogram(points, withhold)
    view.figures = [
        Figure("Mean", withhold.figure(question.get("mean"), answered, 2)),
        Figure("Median", withhold.figure(question.get("median"), answered)),
    ]
    texts = _texts([count for _, count in points], withhold, parts=True)
    view.alt = (
        f"Histogram from {points[0][0]} to {points[-1][0]}: "
        + "; ".join(f"{point}: {text}" for (point, _), text in zip(points, texts, strict=True))
        + f". Mean {view.figures[0].value}."
    )
    view.table = Table(
        f"{view.title}: answers per point",
        ["Answer", "Answers", "Share"],
        [
            [point, text, withhold.share(c, answered) if _shown(text, c) else "withheld"]
            for (point, c), text in zip(points, texts, strict=True)
        ],
    )
    if question.get("nps") is not None:
        _nps(view, question["nps"], withhold)


def gauge(score: float | None, shown: str) -> Gauge:
    """The dial of an NPS `score` (None: withheld or no answers), `shown` in its middle."""
    cx, cy, radius = WIDTH / 2, 124.0, 92.0

    def at(value: float) -> tuple[float, float]:
        angle = math.pi * (1 - (value + 100) / 200)
        return round(cx + radius * math.cos(angle), 2), round(cy - radius * math.sin(angle), 2)

    left, right = at(-100), at(100)
    track = f"M {left[0]} {left[1]} A {radius} {radius} 0 0 1 {right[0]} {right[1]}"
    value = None
    if score is not None and score > -100:
        end = at(score)
        value = f"M {left[0]} {left[1]} A {radius} {radius} 0 0 1 {end[0]} {end[1]}"
    ticks = [
        (left[0], cy + 22, f"{MINUS}100"),
        (cx, cy - radius - 15, "0"),
        (right[0], cy + 22, "100"),
    ]
    return Gauge(cy + 30, track, value, shown, ticks, cx, cy - 8)


def _nps(view: QuestionView, nps: dict[str, Any], withhold: Withhold) -> None:
    groups = [
        ("Promoters (9 or 10)", nps["promoters"]),
        ("Passives (7 or 8)", nps["passives"]),
        ("Detractors (0 to 6)", nps["detractors"]),
    ]
    answers = sum(count for _, count in groups)
    texts = _texts([count for _, count in groups], withhold, parts=True)
    score = withhold.figure(nps["score"], answers)
    withheld = withhold.hides(answers) or nps["score"] is None
    view.chart = gauge(None if withheld else nps["score"], score.replace("-", MINUS))
    view.figures = [Figure("NPS", score), *view.figures]
    view.alt = (
        f"NPS gauge from {MINUS}100 to 100: score {score}; "
        + "; ".join(f"{label} {text}" for (label, _), text in zip(groups, texts, strict=True))
        + f". {view.alt}"
    )
    if view.table is not None:
        view.table.rows.extend(
            [label, text, withhold.share(n, answers) if _shown(text, n) else "withheld"]
            for (label, n), text in zip(groups, texts, strict=True)
        )


def _numbers(view: QuestionView, question: dict[str, Any], withhold: Withhold) -> None:
    answered = question["answered"]
    quantiles = question.get("quantiles") or {}
    # The smallest and largest answers are one respondent's each: a report withholds them.
    extremes = withhold.k <= 1
    low, high = (question.get("min"), question.get("max")) if extremes else (None, None)
    view.figures = [
        Figure("Minimum", withhold.figure(low, answered, 2) if extremes else "withheld"),
        Figure("Mean", withhold.figure(question.get("mean"), answered, 2)),
        Figure("Median", withhold.figure(quantiles.get("p50"), answered, 2)),
        Figure("Maximum", withhold.figure(high, answered, 2) if extremes else "withheld"),
    ]
    view.alt = "Spread of the answers: " + "; ".join(f"{f.label} {f.value}" for f in view.figures)
    view.table = Table(
        f"{view.title}: figures",
        ["Figure", "Value"],
        [[f.label, f.value] for f in view.figures]
        + [[f"{p} percentile", withhold.figure(quantiles.get(f"p{p}"), answered, 2)]
           for p in (10, 25, 75, 90)],
    )  # fmt: skip
    if withhold.hides(answered) or question.get("min") is None:
        return
    p25, p75 = quantiles["p25"], quantiles["p75"]
    view.chart = spread(
        low if low is not None else quantiles["p10"],
        high if high is not None else quantiles["p90"],
        p25, p75, quantiles["p50"], question["mean"],
        ("", "") if extremes else ("10th percentile ", "90th percentile "),
    )  # fmt: skip


def spread(
    low: float,
    high: float,
    p25: float,
    p75: float,
    median: float,
    mean: float,
    ends: tuple[str, str] = ("", ""),
) -> Range:
    """The line from `low` to `high` (named by `ends`), the box of the middle half."""
    left, right = 16.0, WIDTH - 16.0

    def x(value: float) -> float:
        if high <= low:
            return WIDTH / 2
        return round(min(right, max(left, left + (value - low) / (high - low) * (right - left))), 2)

    return Range(
        height=64,
        line=(x(low), x(high)),
        box=(x(p25), x(p75)),
        median=x(median),
        mean=x(mean),
        labels=[
            (x(low), "start", ends[0] + number(low, 2)),
            (x(high), "end", ends[1] + number(high, 2)),
        ],
    )


def _ranks(view: QuestionView, question: dict[str, Any], withhold: Withhold) -> None:
    answered = question["answered"]
    ranks = question["ranks"]
    places = len(ranks)
    ordered = sorted(ranks, key=lambda r: (r["meanRank"] is None, r["meanRank"] or 0))
    hidden = withhold.hides(answered)
    room = WIDTH - VALUE_ROOM
    bars = []
    for index, rank in enumerate(ordered):
        y = index * 40 + 18
        mean = rank["meanRank"]
        width = 0.0 if hidden or mean is None else round((places + 1 - mean) / places * room, 2)
        text = "withheld" if hidden else f"mean {withhold.figure(mean, answered, 2)}"
        bars.append(HBar(clip(_labelled(rank)), y - 4, y, width, text))
    view.chart = HBars(height=len(bars) * 40 + 4, bars=bars)
    view.alt = "Options by mean rank, most preferred first: " + "; ".join(
        f"{_labelled(r)} {withhold.figure(r['meanRank'], answered, 2)}" for r in ordered
    )
    view.table = Table(
        f"{view.title}: mean rank (1 is the most preferred)",
        ["Option", "Mean rank", "Ranked first"],
        [
            [_labelled(r), withhold.figure(r["meanRank"], answered, 2), withhold.count(r["first"])]
            for r in ordered
        ],
    )


def _matrix(view: QuestionView, question: dict[str, Any], withhold: Withhold) -> None:
    rows = question["rows"]
    columns = [_labelled(c) for c in rows[0]["columns"]] if rows else []
    legend = []
    x, y = 0.0, 12.0
    for index, label in enumerate(columns):
        shown = clip(label, 20)
        step = 22 + len(shown) * 7
        if x and x + step > WIDTH:
            x, y = 0.0, y + 18
        legend.append((x, y, index % SERIES, shown))
        x += step
    top = y + 16
    # Each row's columns are parts of those who answered it.
    texts = [_texts([c["count"] for c in row["columns"]], withhold, parts=True) for row in rows]
    drawn = []
    for index, row in enumerate(rows):
        row_y = top + index * 40 + 18
        segments = []
        at = 0.0
        total = row["answered"]
        for series, (cell, text) in enumerate(zip(row["columns"], texts[index], strict=True)):
            if withhold.hides(total) or not _shown(text, cell["count"]) or not total:
                continue
            width = round(cell["count"] / total * WIDTH, 2)
            title = f"{_labelled(cell)}: {cell['count']:,}"
            segments.append(Segment(round(at, 2), width, series % SERIES, title))
            at += width
        drawn.append(StackRow(clip(_labelled(row)), row_y - 4, row_y, segments))
    view.chart = Stacked(height=top + len(rows) * 40 + 4, rows=drawn, legend=legend)
    view.alt = "Stacked bars, one per row: " + "; ".join(
        f"{_labelled(row)}: "
        + ", ".join(f"{_labelled(c)} {text}" for c, text in zip(row["columns"], shown, strict=True))
        for row, shown in zip(rows, texts, strict=True)
    )
    view.table = Table(
        f"{view.title}: answers per row and column",
        ["Row", *columns, "Answered"],
        [
            [_labelled(row), *shown, withhold.count(row["answered"])]
            for row, shown in zip(rows, texts, strict=True)
        ],
    )


_DRAWERS: dict[str, Callable[[QuestionView, dict[str, Any], Withhold], None]] = {
    "single_choice": _options,
    "multiple_choice": _options,
    "dropdown": _options,
    "yes_no": _options,
    "rating": _scale,
    "scale": _scale,
    "nps": _scale,
    "number": _numbers,
    "ranking": _ranks,
    "matrix": _matrix,
}


# The trend of submissions over time, drawn twice: wide for a laptop, narrow
# for a phone, where the wide one would shrink its text to half size.
TREND_WIDTH, TREND_HEIGHT = 720, 200
NARROW_WIDTH = 360
T_LEFT, T_RIGHT, T_BOTTOM, T_TOP = 48, 12, 24, 12


@dataclass(frozen=True, slots=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True, slots=True)
class Trend:
    width: int
    height: int
    lines: list[str]  # polylines' points, broken where a count is withheld
    points: list[Point]
    y_ticks: list[tuple[float, str]]
    x_labels: list[tuple[float, str, str]]  # (x, anchor, label)
    baseline: float
    alt: str
    table: Table


def nice_ceiling(value: float) -> int:
    """1, 2 or 5 times a power of ten, at least `value`: round gridlines."""
    if value <= 0:
        return 1
    power: int = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


BUCKET_FORMATS = {"hour": "%b %-d %H:00", "day": "%b %-d", "week": "%b %-d", "month": "%b %Y"}


def trend(
    buckets: list[dict[str, Any]], interval: str, withhold: Withhold, width: int = TREND_WIDTH
) -> Trend:
    """Submissions per bucket as a line, every bucket a point; a withheld
    count is no point and breaks the line."""
    starts = [datetime.fromisoformat(b["start"]) for b in buckets]
    counts = [b["submissions"] for b in buckets]
    fmt = BUCKET_FORMATS[interval]
    top = nice_ceiling(max((c for c in counts if not withhold.hides(c)), default=0))
    plot_width = width - T_LEFT - T_RIGHT
    plot_height = TREND_HEIGHT - T_BOTTOM - T_TOP
    baseline = T_TOP + plot_height
    step = plot_width / max(1, len(buckets) - 1)
    lines: list[str] = []
    run: list[str] = []
    points = []
    for index, (start, count) in enumerate(zip(starts, counts, strict=True)):
        x = round(T_LEFT + index * step if len(buckets) > 1 else T_LEFT + plot_width / 2, 2)
        if withhold.hides(count):
            if run:
                lines.append(" ".join(run))
            run = []
            continue
        y = round(baseline - count / top * plot_height, 2)
        run.append(f"{x},{y}")
        points.append(Point(x, y, f"{start.strftime(fmt)}: {count:,}"))
    if run:
        lines.append(" ".join(run))
    ticks: list[tuple[float, str]] = []
    for fraction in (0, 0.5, 1):
        label = f"{round(top * fraction):,}"
        if all(label != seen for _, seen in ticks):
            ticks.append((round(baseline - fraction * plot_height, 2), label))
    x_labels: list[tuple[float, str, str]] = []
    if starts:
        x_labels.append((T_LEFT, "start", starts[0].strftime(fmt)))
        if len(starts) > 2:
            middle = starts[len(starts) // 2].strftime(fmt)
            x_labels.append((T_LEFT + plot_width / 2, "middle", middle))
        if len(starts) > 1:
            x_labels.append((width - T_RIGHT, "end", starts[-1].strftime(fmt)))
    busiest = max(
        ((c, s) for c, s in zip(counts, starts, strict=True) if not withhold.hides(c)),
        default=None,
        key=lambda pair: pair[0],
    )
    total = sum(counts)
    alt = (
        f"Line chart of submissions per {interval}, {len(buckets)} {interval}s from "
        f"{starts[0].strftime(fmt)} to {starts[-1].strftime(fmt)}: {withhold.count(total)} in all"
        + (f"; the most, {busiest[0]:,}, on {busiest[1].strftime(fmt)}" if busiest else "")
        + "."
        if starts
        else "No submissions in the range."
    )
    table = Table(
        f"Submissions per {interval}",
        [interval.capitalize(), "Submissions"],
        [[s.strftime(fmt), withhold.count(c)] for s, c in zip(starts, counts, strict=True)],
    )
    return Trend(width, TREND_HEIGHT, lines, points, ticks, x_labels, baseline, alt, table)


@dataclass(frozen=True, slots=True)
class FunnelView:
    """A form's funnel: its steps and its pages as bars, its rates as figures."""

    steps: HBars
    pages: HBars | None  # None: a form of one page
    figures: list[tuple[str, str]]
    alt: str
    pages_alt: str
    table: Table


def _seconds(value: float | None) -> str:
    if value is None:
        return "none timed"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def funnel(found: dict[str, Any]) -> FunnelView:
    """The hosted page's funnel (funnel.service.funnel): views, starts and
    completions as shares of the views; each page's arrivals as shares of
    the starts, with those who stopped there."""
    views, starts, completions = found["views"], found["starts"], found["completions"]
    every = Withhold()
    steps = [("Views", views), ("Starts", starts), ("Completions", completions)]
    pages = found["pages"]
    rate = found["completionRate"]
    figures = [
        ("Completion rate", "none started" if rate is None else f"{rate:.0%}"),
        ("Median time to complete", _seconds(found["medianSecondsToComplete"])),
    ]
    return FunnelView(
        steps=hbars(steps, views, every),
        pages=None
        if len(pages) < 2
        else hbars([(f"Page {p['page']}", p["reached"]) for p in pages], starts, every),
        figures=figures,
        alt=f"Bar chart of the funnel: {views:,} views, {starts:,} starts, "
        f"{completions:,} completions.",
        pages_alt="Bar chart of the respondents who reached each page: "
        + "; ".join(f"page {p['page']} {p['reached']:,}, {p['stopped']:,} stopped" for p in pages)
        + ".",
        table=Table(
            "Funnel: respondents who reached each page and stopped there",
            ["Page", "Reached", "Stopped there", "Drop-off"],
            [
                [
                    f"Page {p['page']}",
                    f"{p['reached']:,}",
                    f"{p['stopped']:,}",
                    "" if p["dropOffRate"] is None else f"{p['dropOffRate']:.0%}",
                ]
                for p in pages
            ],
        ),
    )
