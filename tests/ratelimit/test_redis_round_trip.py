"""With Redis, a request's count, its window and the auth epoch travel in one
script of the limiter's own. These tests hold it to the `limits` library's
counting and arithmetic, which the limiter uses in the process."""

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from limits import RateLimitItemPerMinute
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.api_key.epoch import AuthEpoch
from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker, session_scope
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.models import Plan
from formsapi.ratelimit.service import RateLimiter, _window_stats
from tests.conftest import apps_sharing
from tests.support.factories import create_key, create_org

pytestmark = pytest.mark.usefixtures("whole_minute")


def _settings(redis_url: str, database_url: str = "sqlite://") -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4()}",
        rate_limit_standard=3,
        rate_limit_pro=6,
    )


@pytest.fixture
async def limiter(redis_url: str) -> AsyncIterator[RateLimiter]:
    pipe = RedisPipe(redis_url)
    yield RateLimiter(_settings(redis_url), pipe)
    await pipe.close()


async def test_counts_are_those_of_the_library_in_process(limiter: RateLimiter) -> None:
    in_process = RateLimiter(_settings("redis://unused"))  # no connection: counts in process
    answers = []
    for _ in range(5):
        decision, _ = await limiter.hit("203.0.113.7", Plan.standard)
        library, _ = await in_process.hit("203.0.113.7", Plan.standard)
        assert (decision.allowed, decision.remaining) == (library.allowed, library.remaining)
        answers.append((decision.allowed, decision.remaining))
    looked, _ = await limiter.hit("203.0.113.7", Plan.standard, cost=0)

    assert answers == [(True, 2), (True, 1), (True, 0), (False, 0), (False, 0)]
    assert (looked.allowed, looked.remaining) == (True, 0)  # a look counts nothing


@pytest.mark.parametrize(
    "window",
    [
        [None, None, 1, 119_999],  # a fresh window: (previous, TTL ms, current, TTL ms)
        [7, 31_250, 2, 91_250],
        [40, 5_000, 0, 0],
        [3, 59_999, 3, 119_999],
    ],
)
async def test_headers_are_the_librarys_arithmetic(window: list[object]) -> None:
    """The same window through `_window_stats` and through the library's own
    get_window_stats (its storage answering with that window)."""
    item = RateLimitItemPerMinute(10)
    storage = MemoryStorage()
    previous, previous_ttl, current, current_ttl = (int(value or 0) for value in window)  # type: ignore[call-overload]

    async def answer(key: str, expiry: int) -> tuple[int, float, int, float]:
        return (previous, previous_ttl / 1000, current, current_ttl / 1000)

    storage.get_sliding_window = answer  # type: ignore[method-assign]
    reset_at, remaining = await SlidingWindowCounterRateLimiter(storage).get_window_stats(
        item, "203.0.113.10"
    )

    ours = _window_stats(item, window)
    assert ours.remaining == remaining
    assert abs(ours.reset_time - reset_at) < 0.5


async def test_the_key_read_alongside_comes_back(limiter: RateLimiter, redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    key = f"test-{uuid.uuid4()}:auth-epoch"
    await redis.set(key, "e1")

    _, value = await limiter.hit("203.0.113.8", Plan.standard, read=key)
    _, missing = await limiter.hit("203.0.113.8", Plan.standard, read=key + "-absent")
    _, unread = await limiter.hit("203.0.113.8", Plan.standard)

    assert (value, missing, unread) == (b"e1", None, None)
    await redis.delete(key)
    await redis.aclose()


async def test_scripts_forgotten_by_redis_are_loaded_again(
    limiter: RateLimiter, redis_url: str
) -> None:
    await limiter.hit("203.0.113.9", Plan.standard)
    redis = Redis.from_url(redis_url)
    await redis.script_flush()  # as after a Redis restart
    await redis.aclose()

    decision, _ = await limiter.hit("203.0.113.9", Plan.standard)

    assert decision.allowed
    assert decision.remaining == 1


@pytest.fixture
async def one_worker_on_redis(
    engine: AsyncEngine, database_url: str, redis_url: str
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings]]:
    settings = _settings(redis_url, database_url)
    async with apps_sharing(settings, count=1) as (client,):
        yield client, settings


async def test_a_cached_key_revoked_counts_at_the_standard_rate(
    one_worker_on_redis: tuple[httpx.AsyncClient, Settings],
    session: AsyncSession,
    engine: AsyncEngine,
) -> None:
    client, settings = one_worker_on_redis
    org = await create_org(session, Plan.pro)
    key_id, secret = await create_key(session, org)
    await session.commit()
    auth = {"Authorization": f"Bearer {secret}"}
    first = await client.get("/v1/forms", headers=auth)  # now cached as a pro key
    assert first.headers["ratelimit-limit"] == "6"

    assert settings.redis_url is not None
    pipe = RedisPipe(settings.redis_url.get_secret_value())
    epoch = AuthEpoch(pipe, settings.redis_prefix)
    async with session_scope(create_sessionmaker(engine), epoch.after_commit) as other:
        await api_key_service.revoke(other, key_id)
    revoked = await client.get("/v1/forms", headers=auth)
    again = await client.get("/v1/forms", headers=auth)

    assert revoked.status_code == again.status_code == 401
    assert revoked.headers["ratelimit-limit"] == again.headers["ratelimit-limit"] == "3"
    assert [revoked.headers["ratelimit-remaining"], again.headers["ratelimit-remaining"]] == [
        "2",
        "1",
    ]
    # The pro counter holds the valid request and the one stray count made before
    # the revocation was seen; the key is then forgotten, not counted there again.
    pro, _ = await RateLimiter(settings, pipe).hit("127.0.0.1", Plan.pro, cost=0)
    await pipe.close()
    assert pro.remaining == 6 - 2
