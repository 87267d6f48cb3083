"""The service's clock, and UTC timestamps at millisecond precision, the
precision the API prints.

Every reading of the time goes through `utcnow()` or `monotonic()`, so tests
(and a process run to show what clock skew does) move the service's clock
with `shift()` instead of sleeping.
"""

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

# The `start` of the count tables' all-time rows (period "t": answer_counts,
# funnel_counts).
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A '+' in an unencoded query string arrives as a space: "...T10:00:00 01:00".
_SPACE_OFFSET = re.compile(r" (\d{2}(?::?\d{2})?)$")

_offset = 0.0  # seconds added to the system clock


def utcnow() -> datetime:
    now = datetime.now(UTC)
    if _offset:
        now += timedelta(seconds=_offset)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def monotonic() -> float:
    """Seconds on a clock that never goes back: for timeouts and cool-downs."""
    return time.monotonic() + _offset


def offset() -> timedelta:
    """How far the service's clock runs from the system's: what a time read
    from the database's clock is moved by, so that `shift()` moves it too."""
    return timedelta(seconds=_offset)


def set_offset(seconds: float) -> None:
    """Run the service's clock `seconds` ahead of the system's (behind if negative)."""
    global _offset
    _offset = seconds


@contextmanager
def shift(by: timedelta) -> Iterator[None]:
    """The service's clock moved by `by` for the duration of the block."""
    before = _offset
    set_offset(before + by.total_seconds())
    try:
        yield
    finally:
        set_offset(before)


def isoformat_z(value: datetime) -> str:
    """`2026-11-21T14:17:19.123Z`: what every timestamp in the API looks like."""
    # One C call and a slice for the usual UTC value: this runs for every row
    # of a page, where strftime and replace() were measurable (bench/RESULTS.md).
    text = value.isoformat(timespec="milliseconds")
    if text.endswith("+00:00"):
        return text[:-6] + "Z"
    if value.tzinfo is None:
        return text + "Z"
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_timestamp(text: str) -> datetime:
    """Parse ISO 8601; no offset means UTC. Raises ValueError with a readable message."""
    text = _SPACE_OFFSET.sub(r"+\1", text.strip())
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("must be an ISO 8601 timestamp such as 2026-01-31T09:30:00Z") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("must fall between the years 1 and 9999 in UTC") from None
