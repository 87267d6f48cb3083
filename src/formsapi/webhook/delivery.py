"""One delivery attempt: the signed request, what its answer means, and
when to try again. No database here (worker.py holds the loop)."""

import random
import time
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from enum import Enum

import aiohttp
from standardwebhooks import Webhook

from formsapi import __version__
from formsapi.kit import egress
from formsapi.kit.backoff import jittered

USER_AGENT = f"formsapi-webhooks/{__version__}"
BODY_CAP = 2048  # bytes of a receiver's answer kept in the log
# A 429 or a timeout waits at least this long before the next try (capped by
# the schedule's longest step, so a short test schedule stays short).
OVERLOAD_FLOOR = 60.0


def body(type_: str, timestamp: str, data: str) -> bytes:
    """The Standard Webhooks payload, {type, timestamp, data}, around data stored as JSON text."""
    return f'{{"type":"{type_}","timestamp":"{timestamp}","data":{data}}}'.encode()


def headers(event_id: str, payload: bytes, secrets: list[str], now: datetime) -> dict[str, str]:
    """Standard Webhooks headers: `webhook-id` is the event's id on every
    attempt and resend; one signature per live secret, so a receiver
    verifies with either while a rotation overlaps."""
    text = payload.decode()
    signatures = " ".join(Webhook(secret).sign(event_id, now, text) for secret in secrets)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


class Outcome(Enum):
    """What came of a claimed delivery, as the worker acts on it."""

    delivered = "delivered"  # answered 2xx
    failed = "failed"  # tried and failed: tried again on the schedule, if any is left
    aborted = "aborted"  # failed, and the receiver asked not to retry it (abort-message)
    # Nothing sent: the endpoint was disabled or deleted, or the event purged, meanwhile.
    endpoint_disabled = "endpoint disabled"
    event_gone = "event no longer kept"


# Those that made an attempt: in the delivery's log and its count.
TRIED = frozenset({Outcome.delivered, Outcome.failed, Outcome.aborted})


@dataclass(frozen=True, slots=True)
class Result:
    """What an attempt came to."""

    outcome: Outcome
    status_code: int | None = None
    response_body: str = ""
    error: str | None = None
    duration_ms: int = 0
    overloaded: bool = False  # 429 or a timeout: back off harder
    timed_out: bool = False  # no answer in time (the lookup's, or the receiver's)
    retry_after: float | None = None
    disable: str | None = None  # why the endpoint should be disabled

    @property
    def tried(self) -> bool:
        """Whether an attempt was made (or failed before its request went):
        one for the log and the delivery's count."""
        return self.outcome in TRIED


def skipped(outcome: Outcome) -> Result:
    """Nothing was sent, for want of an endpoint or an event to send."""
    return Result(outcome, error=outcome.value)


def _retry_after(value: str | None, now: float) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit() also takes "²"
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


async def attempt(
    client: egress.Client,
    url: str,
    payload: bytes,
    request_headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - one deadline for connect, send and the read
) -> Result:
    """POST once, within `timeout` seconds from connecting to the last byte
    kept; never raises for what the receiver or the network does."""
    started = time.monotonic()
    try:
        answer = await client.post(url, payload, request_headers, timeout, BODY_CAP)
    except egress.EgressRefused as refused:
        return _failed(started, f"refused: {refused}")
    except egress.LookupTimedOut as slow:
        return _failed(started, str(slow), timed_out=True)
    except TimeoutError:
        return _failed(started, "timed out", timed_out=True)
    except (aiohttp.ClientError, OSError) as error:
        return _failed(started, f"{type(error).__name__}: {error}".replace("\x00", "")[:500])
    duration = int((time.monotonic() - started) * 1000)
    # NUL is the one character PostgreSQL text refuses: a receiver's must not
    # fail the batch its outcome is written in.
    text = answer.body.decode("utf-8", "replace").replace("\x00", "")
    status = answer.status
    control = answer.headers.get("webhook-delivery", "").strip().lower()
    if 200 <= status < 300:
        return Result(Outcome.delivered, status, text, duration_ms=duration)
    disable = None
    if status == 410:
        disable = "The receiver answered 410 Gone."
    elif control == "disable":
        disable = "The receiver asked to be disabled (webhook-delivery: disable)."
    return Result(
        Outcome.aborted if control == "abort-message" else Outcome.failed,
        status,
        text,
        error=f"answered {status}",
        duration_ms=duration,
        overloaded=status == 429,
        retry_after=_retry_after(answer.headers.get("retry-after"), time.time()),
        disable=disable,
    )


def _failed(started: float, error: str, *, timed_out: bool = False) -> Result:
    duration = int((time.monotonic() - started) * 1000)
    return Result(
        Outcome.failed, error=error, duration_ms=duration, overloaded=timed_out, timed_out=timed_out
    )


def next_delay(
    attempts: int, schedule: list[float], result: Result, rng: random.Random
) -> float | None:
    """Seconds until the next attempt after `attempts` have failed, or None
    when the schedule is spent. Each step is jittered by ±20%; a 429 or a
    timeout waits at least twice its step and OVERLOAD_FLOOR; a Retry-After
    is honoured between that wait and twice it."""
    if attempts >= len(schedule):
        return None
    step = schedule[attempts]
    if result.overloaded:
        step = max(2 * step, min(OVERLOAD_FLOOR, max(schedule)))
    delay = jittered(step, rng)
    if result.retry_after is not None:
        delay = min(max(result.retry_after, step), 2 * step)
    return delay
