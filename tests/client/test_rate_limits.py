"""429s from the server's real rate limiter (shared in Redis): the client
waits the `Retry-After` it is given, then succeeds, even for a write (the
limit is checked before anything is done); a `Retry-After` beyond
`max_retry_wait` is raised at once, carrying it.

A 429 earned by a burst asks for the rest of a minute, too long to wait in a
test, so the tests set the limiter's window in Redis to end in a second
(its keys as formsapi/ratelimit/service.py names them)."""

import logging
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from formsapi_client import Client, RateLimited
from tests.client.conftest import Live, live_server

LIMIT = 50
PREFIX = f"client-test-{uuid.uuid4().hex[:8]}"
WINDOW_MS = 60_000


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, redis_url: str
) -> Iterator[Live]:
    with live_server(
        request,
        tmp_path_factory.mktemp("client"),
        rate_limit_enabled="true",
        rate_limit_standard=str(LIMIT),
        redis_url=redis_url,
        redis_prefix=PREFIX,
    ) as server:
        yield server


@pytest.fixture
def window(redis_url: str) -> Iterator[redis.Redis]:
    store = redis.Redis.from_url(redis_url)
    yield store
    store.delete(*store.keys(f"{PREFIX}:*") or ["-"])
    store.close()


def spend(store: redis.Redis, ends_in_ms: int) -> None:
    """This address has used the whole limit in a window that ends (becomes
    the previous window) in `ends_in_ms`."""
    current = f"{PREFIX}:limit:{LIMIT}/60:127.0.0.1"
    store.delete(f"{current}/-1")
    store.set(current, LIMIT, px=WINDOW_MS + ends_in_ms)


def test_a_429_is_waited_out_as_retry_after_says_then_the_write_succeeds(
    client: Client, window: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="formsapi_client")
    form = client.forms.create("Limited")
    spend(window, ends_in_ms=1000)

    started = time.monotonic()
    # A PATCH is not deduplicated, yet a 429 is retried: nothing was done.
    renamed = client.forms.update(form.id, title="Waited")
    waited = time.monotonic() - started

    assert renamed.title == "Waited"
    [retry] = [r.getMessage() for r in caplog.records if r.name == "formsapi_client"]
    assert "429" in retry
    assert "in 1.00 s" in retry
    assert waited >= 1.0


def test_a_retry_after_beyond_max_retry_wait_is_raised_at_once(
    live: Live, window: redis.Redis
) -> None:
    spend(window, ends_in_ms=WINDOW_MS)  # a fresh window: the rest of a minute
    with Client(live.base_url, live.secret, max_retry_wait=5) as impatient:
        started = time.monotonic()
        with pytest.raises(RateLimited) as limited:
            impatient.forms.list()
    assert time.monotonic() - started < 1
    assert limited.value.status == 429
    assert limited.value.type == "/problems/rate-limited"
    assert limited.value.retry_after is not None
    assert 5 < limited.value.retry_after <= 60
