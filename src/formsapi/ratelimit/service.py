"""Per-IP request limits by plan, and the sign-in throttle.

Counters live in this process by default and in Redis when FORMSAPI_REDIS_URL is
set, so every worker and every machine shares one limit.

The strategy is the sliding window counter: two counters per IP (this window,
the previous one weighted by how much of it still overlaps the last 60 s),
O(1) per request. A burst is limited exactly (the 121st request of a minute
is refused); across a window boundary the previous window's count is
pro-rated. The moving window was measured first and dropped: it keeps one
entry per request and scans them on every check, which cost more per request
the higher the limit (see bench/RESULTS.md).

In this process the `limits` library counts. In Redis the limiter runs a
script of its own (sliding_window.lua: the library's counting, plus the read
of the auth epoch) on the process's shared connection: one script per
request, where the library's calls take two round trips and the epoch a
third (bench/RESULTS.md). Redis down or frozen must not take the API down:
the limiter then counts per process, and the connection's circuit breaker
keeps requests from waiting on Redis meanwhile.
"""

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from limits import RateLimitItem, RateLimitItemPerMinute, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import (
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)
from limits.aio.strategies import (
    RateLimiter as Strategy,
)
from limits.errors import StorageError
from limits.util import WindowStats
from redis.exceptions import NoScriptError, RedisError

from formsapi.config import Settings
from formsapi.errors import RateLimited
from formsapi.kit.breaker import CircuitBreaker, Open
from formsapi.kit.crypto import sha1_hex
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.models import Plan

log = logging.getLogger("formsapi")
T = TypeVar("T")
STORE_ERRORS = (StorageError, RedisError, OSError)
SCRIPT = (Path(__file__).parent / "sliding_window.lua").read_text()
SCRIPT_SHA = sha1_hex(SCRIPT)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_after: int  # whole seconds until the window has room again

    def headers(self) -> dict[str, str]:
        headers = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_after),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.reset_after)
        return headers


class RateLimiter:
    def __init__(self, settings: Settings, pipe: RedisPipe | None = None) -> None:
        self.enabled = settings.rate_limit_enabled
        self._pipe = pipe  # the process's shared Redis connection (kit/redis_pipe.py)
        self._prefix = settings.redis_prefix
        self._memory = SlidingWindowCounterRateLimiter(MemoryStorage())
        self._warned_at = 0.0
        self._items: dict[str, RateLimitItem] = {
            Plan.standard: RateLimitItemPerMinute(settings.rate_limit_standard, namespace="ip"),
            Plan.pro: RateLimitItemPerMinute(settings.rate_limit_pro, namespace="ip"),
        }

    def limit_of(self, plan: str) -> int:
        return self._item(plan).amount

    def _item(self, plan: str) -> RateLimitItem:
        return self._items.get(plan, self._items[Plan.standard])

    async def hit(
        self, client_ip: str, plan: str, read: str | None = None, *, cost: int = 1
    ) -> tuple[Decision, Any]:
        """Count one request (`cost` 0: only look). `read` names a key of ours
        to fetch from Redis in the same call (the auth epoch); its value comes
        back with the decision, None when it was not read."""
        item = self._item(plan)
        value = None
        try:
            if self._pipe is None:
                raise _NoRedis
            allowed, (reset_at, remaining), value = await self._redis_hit(
                item, client_ip, read, cost
            )
        except (_NoRedis, *STORE_ERRORS) as error:
            if not isinstance(error, _NoRedis | Open) and time.monotonic() - self._warned_at > 30:
                self._warned_at = time.monotonic()
                log.warning("rate-limit store unavailable (%s): limiting per process", error)
            allowed = True if cost == 0 else await self._memory.hit(item, client_ip)
            reset_at, remaining = await self._memory.get_window_stats(item, client_ip)
        reset_after = max(1, math.ceil(reset_at - time.time()))
        return Decision(allowed, item.amount, max(0, remaining), reset_after), value

    async def _redis_hit(
        self, item: RateLimitItem, client_ip: str, read: str | None, cost: int
    ) -> tuple[bool, WindowStats, Any]:
        assert self._pipe is not None
        current = f"{self._prefix}:limit:{item.amount}/{item.get_expiry()}:{client_ip}"
        keys = (f"{current}/-1", current, *((read,) if read is not None else ()))
        arguments = (item.amount, item.get_expiry() * 1000, cost)
        try:
            [answer] = await self._pipe.execute(
                ("EVALSHA", SCRIPT_SHA, len(keys), *keys, *arguments)
            )
        except NoScriptError:
            # Redis restarted or was flushed: EVAL sends the script, and caches it again.
            [answer] = await self._pipe.execute(("EVAL", SCRIPT, len(keys), *keys, *arguments))
        allowed, *window, value = answer
        return bool(allowed), _window_stats(item, window), value or None

    async def check(self, client_ip: str, plan: str) -> Decision:
        """Count the request; raise RateLimited (429) past the plan's limit."""
        decision, _ = await self.hit(client_ip, plan)
        return enforce(decision)


class _NoRedis(Exception):
    """No Redis is configured: count in this process."""


def enforce(decision: Decision) -> Decision:
    """Raise RateLimited (429) for a request past its limit."""
    if not decision.allowed:
        raise RateLimited(
            f"More than {decision.limit} requests a minute from this address. "
            f"Retry in {decision.reset_after} s.",
            headers=decision.headers(),
        )
    return decision


def _window_stats(item: RateLimitItem, window: list[Any] | None) -> WindowStats:
    """(reset time, remaining) from the script's window (counts, TTLs in ms), by
    the `limits` library's own SlidingWindowCounterRateLimiter.get_window_stats
    arithmetic, so both stores answer alike; a test holds the two equal."""
    previous, previous_ttl, current, current_ttl = window or (0, 0, 0, 0)
    previous, current = int(previous or 0), int(current or 0)
    previous_expires_in = max(0.0, float(previous_ttl or 0)) / 1000
    current_expires_in = max(0.0, float(current_ttl or 0)) / 1000
    expiry = item.get_expiry()
    weighted = previous * previous_expires_in / expiry + current
    remaining = max(0, item.amount - math.floor(weighted))
    now = time.time()
    if not (previous or current):
        return WindowStats(now, remaining)
    previous_reset_in = previous_expires_in % (expiry / previous) if previous else math.inf
    current_reset_in = current_expires_in % expiry if current else math.inf
    return WindowStats(now + min(previous_reset_in, current_reset_in), remaining)


class Throttle:
    """Attempts at something that must stay rare, counted per email and per
    address (PER_ACCOUNT, PER_ADDRESS).

    Counts live where the request limits live (Redis when set, through the
    `limits` library's own client), so every worker shares them; a Redis
    outage falls back to this process, and the process's Redis circuit breaker
    and timeout bound what an outage costs, as for every Redis call.
    """

    PER_ACCOUNT: RateLimitItem
    PER_ADDRESS: RateLimitItem

    def __init__(self, settings: Settings, pipe: RedisPipe | None = None) -> None:
        storage: Storage = MemoryStorage()
        self._breaker: CircuitBreaker | None = None
        self._timeout = 1.0
        if settings.redis_url is not None and pipe is not None:
            self._breaker, self._timeout = pipe.breaker, pipe.timeout
            storage = RedisStorage(
                _async_scheme(settings.redis_url.get_secret_value()),
                implementation="redispy",
                key_prefix=settings.redis_prefix,
                socket_timeout=pipe.timeout,
                socket_connect_timeout=pipe.timeout,
            )
        # Exact windows: these limits are small, and a moving window has no
        # boundary at which twice the allowance fits.
        self._strategy: Strategy = MovingWindowRateLimiter(storage)
        self._fallback: Strategy = MovingWindowRateLimiter(MemoryStorage())

    async def _run(self, call: Callable[[Strategy], Awaitable[T]]) -> T:
        breaker = self._breaker
        if breaker is None:
            return await call(self._strategy)
        try:
            probe = breaker.admit()
        except Open:
            return await call(self._fallback)
        try:
            async with asyncio.timeout(self._timeout):
                result = await call(self._strategy)
        except STORE_ERRORS as error:
            breaker.failed(probe)
            log.warning("sign-in throttle store unavailable (%s): counting per process", error)
            return await call(self._fallback)
        except BaseException:
            if probe:
                breaker.done()
            raise
        breaker.succeeded()
        return result

    def _counters(self, email: str, address: str) -> list[tuple[RateLimitItem, str]]:
        # The email hashed: the store is no place for a list of who tried to sign in.
        account = hashlib.sha256(email.strip().lower().encode()).hexdigest()
        return [(self.PER_ACCOUNT, account), (self.PER_ADDRESS, address)]

    async def attempt(self, email: str, address: str) -> int:
        """Take a slot for one attempt, before the password is checked: 0 when it
        may go ahead, else the seconds to wait. Taken atomically, so a burst of
        concurrent guesses gets no more checks than the limit allows. The
        address is counted first, and an address refused takes nothing of the
        account's allowance: a few flooding clients cannot use up a form's
        (or an account's) for everyone else."""
        wait, _ = await self.refusal(email, address)
        return wait

    async def refusal(self, email: str, address: str, cost: int = 1) -> tuple[int, str | None]:
        """attempt(), saying which count refused: "address" or "account" (None
        when it may go ahead). `cost`: how many of each allowance it takes."""
        wait, which = 0, None
        for item, key in reversed(self._counters(email, address)):
            if wait:
                break

            async def take(strategy: Strategy, item: RateLimitItem = item, key: str = key) -> int:
                if await strategy.hit(item, key, cost=cost):
                    return 0
                reset_at, _ = await strategy.get_window_stats(item, key)
                return max(1, math.ceil(reset_at - time.time()))

            wait = await self._run(take)
            which = "address" if item is self.PER_ADDRESS else "account"
        return wait, which if wait else None

    async def succeeded(self, email: str) -> None:
        item, key = self._counters(email, "")[0]

        async def clear(strategy: Strategy) -> None:
            await strategy.clear(item, key)

        await self._run(clear)


class SignInThrottle(Throttle):
    """Sign-in attempts: five for one email in 15 minutes, or 20 from one
    address, make the next one wait; an account's count clears when it signs
    in. Any email is counted, existing or not, so the throttle reveals nothing
    about who has an account."""

    PER_ACCOUNT = RateLimitItemPerMinute(5, 15, namespace="signin-account")
    PER_ADDRESS = RateLimitItemPerMinute(20, 15, namespace="signin-ip")


class PartialThrottle(Throttle):
    """New partial responses (a respondent's first page kept): 200 an hour
    from one client, and 100,000 an hour into one form, so a script cannot
    fill the database with unfinished answers."""

    PER_ACCOUNT = RateLimitItemPerMinute(100_000, 60, namespace="partial-form")
    PER_ADDRESS = RateLimitItemPerMinute(200, 60, namespace="partial-ip")


class UploadThrottle(Throttle):
    """Uploads from the hosted page: 100 an hour from one client, 20,000 an
    hour into one form, so a script cannot fill the storage with files no
    submission will take (those are purged after
    FORMSAPI_UPLOAD_ORPHAN_HOURS all the same)."""

    PER_ACCOUNT = RateLimitItemPerMinute(20_000, 60, namespace="upload-form")
    PER_ADDRESS = RateLimitItemPerMinute(100, 60, namespace="upload-ip")


class UploadBytesThrottle(Throttle):
    """Bytes uploaded from hosted pages: FORMSAPI_UPLOAD_BYTES_PER_IP from one
    client within FORMSAPI_UPLOAD_ORPHAN_HOURS (the time an upload no
    submission names is kept: so at most what one client can have waiting
    at once), FORMSAPI_UPLOAD_BYTES_PER_FORM an hour into one form. Taken
    when an upload starts, by what it declares (its Content-Length), so a
    flood is refused before its bytes are read. Counted in whole MiB (a
    moving window keeps an entry per unit), each upload at least one."""

    def __init__(self, settings: Settings, pipe: RedisPipe | None = None) -> None:
        super().__init__(settings, pipe)
        self.PER_ACCOUNT = RateLimitItemPerMinute(
            _mib(settings.upload_bytes_per_form), 60, namespace="upload-bytes-form"
        )
        self.PER_ADDRESS = RateLimitItemPerSecond(
            _mib(settings.upload_bytes_per_ip),
            max(1, round(settings.upload_orphan_hours * 3600)),
            namespace="upload-bytes-ip",
        )

    def _counters(self, email: str, address: str) -> list[tuple[RateLimitItem, str]]:
        return [(self.PER_ACCOUNT, email), (self.PER_ADDRESS, address)]  # a form's id, as it is

    def largest(self) -> int:
        """The bytes of the largest upload both allowances can ever take."""
        return min(self.PER_ADDRESS.amount, self.PER_ACCOUNT.amount) * MIB

    async def take(self, form_id: str, address: str, size: int) -> tuple[int, str | None]:
        """Take `size` bytes of both allowances: (0, None) when the upload may
        go ahead, else the seconds to wait and which refused it: "address"
        or "form"."""
        wait, which = await self.refusal(form_id, address, cost=_mib(size))
        return wait, "form" if which == "account" else which


class FormSaveThrottle(Throttle):
    """Large saves of forms' content: an organization's take at most
    3,000,000 bytes of JSON past the first 20,000 of each save a minute
    (counted in 10,000). A save is read, checked and written in about a
    microsecond a byte, so its large forms have some 3 s of the server's
    time a minute for saving; ordinary forms' saves are not counted."""

    PER_ACCOUNT = RateLimitItemPerMinute(300, 1, namespace="form-saves")
    PER_ADDRESS = PER_ACCOUNT
    FREE = 20_000
    STEP = 10_000

    def _counters(self, email: str, address: str) -> list[tuple[RateLimitItem, str]]:
        return [(self.PER_ACCOUNT, email)]  # the organization's id, as it is

    async def take(self, organization_id: str, size: int) -> None:
        """A save of `size` bytes counted; RateLimited (with Retry-After) past
        the organization's allowance."""
        if size <= self.FREE:
            return
        wait, _ = await self.refusal(organization_id, "", cost=-(-(size - self.FREE) // self.STEP))
        if wait:
            raise RateLimited(
                "This organization has saved large forms often in the last minute; "
                f"try again in {wait} s.",
                headers={"Retry-After": str(wait)},
            )


MIB = 1024 * 1024


def _mib(size: int) -> int:
    return max(1, -(-size // MIB))


class ResumeMailThrottle(Throttle):
    """Links back to a form's saved answers, mailed to an address a
    respondent types: three an hour to one address, ten from one client, so
    the hosted page cannot be used to flood someone's inbox."""

    PER_ACCOUNT = RateLimitItemPerMinute(3, 60, namespace="resume-mail-to")
    PER_ADDRESS = RateLimitItemPerMinute(10, 60, namespace="resume-mail-ip")


class PasswordThrottle(Throttle):
    """Guesses at a form's password on its hosted page: five a minute from
    one client, thirty a minute at one form from everyone, so a flood from
    many addresses is held to the form's allowance (its respondents wait
    with it: docs/guides/public-forms.md weighs a PIN against a long password)."""

    PER_ACCOUNT = RateLimitItemPerMinute(30, 1, namespace="form-password")
    PER_ADDRESS = RateLimitItemPerMinute(5, 1, namespace="form-password-ip")

    def _counters(self, email: str, address: str) -> list[tuple[RateLimitItem, str]]:
        return [(self.PER_ACCOUNT, email), (self.PER_ADDRESS, address)]  # a form's id, as it is


class PublicPostThrottle(Throttle):
    """Posts to hosted form pages and their uploads, apart from the API's
    limits: FORMSAPI_PUBLIC_POSTS_PER_IP a minute from one client, and
    FORMSAPI_PUBLIC_POSTS_PER_FORM a minute into one form, in a moving window
    (exact: the next post past either is refused, however many processes
    share the Redis). Off with the other limits (FORMSAPI_RATE_LIMIT_ENABLED)."""

    def __init__(self, settings: Settings, pipe: RedisPipe | None = None) -> None:
        super().__init__(settings, pipe)
        self.enabled = settings.rate_limit_enabled
        self.PER_ACCOUNT = RateLimitItemPerMinute(
            settings.public_posts_per_form, namespace="public-form"
        )
        self.PER_ADDRESS = RateLimitItemPerMinute(
            settings.public_posts_per_ip, namespace="public-ip"
        )

    def _counters(self, email: str, address: str) -> list[tuple[RateLimitItem, str]]:
        return [(self.PER_ACCOUNT, email), (self.PER_ADDRESS, address)]  # a form's id, as it is

    async def post(self, form_id: str, address: str) -> tuple[int, str | None]:
        """A post to `form_id` from `address`: (0, None) when it may go ahead,
        else the seconds to wait and which limit refused it: "address" or
        "form"."""
        if not self.enabled:
            return 0, None
        wait, which = await self.refusal(form_id, address)
        return wait, "form" if which == "account" else which


def _async_scheme(url: str) -> str:
    # limits picks its async Redis client from the scheme: redis:// -> async+redis://
    return url if url.startswith("async+") else f"async+{url}"
