"""The steps a funnel counts, as the keys of models.FunnelCount, and how a
time to complete is rounded to be counted.

A respondent's steps: a view of the first page; a start (they began
answering); each time the furthest page they reached goes up, `reach:k` for
the new page and `left:j` for the one they had reached before; on
completion, `done`, `left:f` for the furthest page they had reached, and
their time to complete, `time:s`. So every respondent who started holds one
more `reach` (page 1's is the start) than `left` until they complete: those
who stopped on page k are `reach:k` less `left:k`.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from formsapi.kit.time import EPOCH

VIEW = "view"
START = "start"
DONE = "done"
_REACH = "reach:"
_LEFT = "left:"
_TIME = "time:"

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# Times to complete are counted up to a day; a longer one counts as a day.
LONGEST = 86_400


def reach(page: int) -> str:
    """Page `page` (from 1) became the furthest reached."""
    return f"{_REACH}{page}"


def left(page: int) -> str:
    """Page `page` (from 1) stopped being the furthest reached: a later one
    was reached, or the form was sent from there."""
    return f"{_LEFT}{page}"


def rounded_seconds(seconds: float) -> int:
    """A time to complete as it is counted: whole seconds under 100, two
    significant digits from there (140, 1500, 23000), a day at most."""
    whole = max(0, round(seconds))
    if whole >= 100:
        digits = len(str(whole))
        unit = 10 ** (digits - 2)
        whole = (whole + unit // 2) // unit * unit
    return min(whole, LONGEST)


def took(seconds: float) -> str:
    return f"{_TIME}{rounded_seconds(seconds)}"


def parse(step: str) -> tuple[str, int | None]:
    """A step's kind ("view", "reach", "time"...) and its number, if any."""
    kind, colon, number = step.partition(":")
    return (kind, int(number)) if colon else (kind, None)


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    return hour_of(moment).replace(hour=0)


def periods(hour: datetime) -> list[tuple[str, datetime]]:
    """Where a step of `hour` is added: its hour, its UTC day, all time."""
    return [("h", hour), ("d", day_of(hour)), ("t", EPOCH)]


@dataclass(frozen=True, slots=True)
class Completion:
    """What a submission from the hosted page tells the funnel."""

    hour: datetime  # its respondent's: when their first page was served, else now
    seconds: float | None  # its time to complete, when its stamp told when it began
    page: int  # the page it was sent from (from 0): its furthest, without a partial

    def steps(self, furthest: int | None) -> list[str]:
        """Its steps, `furthest` the furthest page (from 0) its partial reached."""
        found = [DONE, left((self.page if furthest is None else furthest) + 1)]
        if self.seconds is not None:
            found.append(took(self.seconds))
        return found
