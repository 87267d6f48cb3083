"""The buckets of a time series: hours, days, weeks (from Monday) or months
of a time zone, as UTC instants. A day is a local day, 23 or 25 hours long
on the days the clocks change; an hour is an hour of elapsed time."""

from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

Interval = Literal["hour", "day", "week", "month"]
# The span a series covers when `since` is not given, by interval.
DEFAULT_SPAN = {
    "hour": timedelta(hours=48),
    "day": timedelta(days=30),
    "week": timedelta(weeks=26),
    "month": timedelta(days=365),
}
MAX_BUCKETS = 1000
# A series lies within these: local midnights and months stay within the
# years datetime holds, whatever the zone.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def boundaries(
    since: datetime, until: datetime, interval: Interval, zone: ZoneInfo
) -> list[datetime]:
    """The UTC instants that bound the buckets: the first is the start of the
    bucket holding `since`, the last the end of the one holding the moment
    before `until`. At most MAX_BUCKETS + 1 (ValueError past that)."""
    start = _floor(since, interval, zone)
    found = [start]
    while found[-1] < until:
        if len(found) > MAX_BUCKETS:
            raise ValueError(f"more than {MAX_BUCKETS} buckets")
        found.append(_next(found[-1], interval, zone))
    return found


def _floor(moment: datetime, interval: Interval, zone: ZoneInfo) -> datetime:
    if interval == "hour":
        return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    local = moment.astimezone(zone)
    day = local.date()
    if interval == "week":
        day -= timedelta(days=day.weekday())
    elif interval == "month":
        day = day.replace(day=1)
    return _midnight(day.year, day.month, day.day, zone)


def _next(start: datetime, interval: Interval, zone: ZoneInfo) -> datetime:
    if interval == "hour":
        return start + timedelta(hours=1)
    day = start.astimezone(zone).date()
    if interval == "day":
        day += timedelta(days=1)
    elif interval == "week":
        day += timedelta(weeks=1)
    else:
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return _midnight(day.year, day.month, day.day, zone)


def _midnight(year: int, month: int, day: int, zone: ZoneInfo) -> datetime:
    """The first moment of a local day, in UTC. Where midnight does not exist
    (a zone that springs forward at 00:00), a time in the gap read with the
    offset before it (fold 0) is the moment of the change: the day's first."""
    return datetime(year, month, day, tzinfo=zone).astimezone(UTC)
