"""The shared Redis connection: every caller gets its own replies, whatever
interleaves, and a lost or stuck connection fails its callers and is replaced."""

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import NoScriptError, ResponseError

from formsapi.kit.redis_pipe import RedisPipe


@pytest.fixture
async def pipe(redis_url: str) -> AsyncIterator[RedisPipe]:
    pipe = RedisPipe(redis_url, timeout=0.5)
    yield pipe
    await pipe.close()


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_url)
    yield redis
    await redis.aclose()


async def test_concurrent_callers_each_get_their_own_replies(pipe: RedisPipe) -> None:
    prefix = f"test-{uuid.uuid4()}"

    async def caller(n: int) -> list[object]:
        key = f"{prefix}:{n}"
        return await pipe.execute(("SET", key, n), ("INCRBY", key, n), ("GET", key), ("DEL", key))

    answers = await asyncio.gather(*(caller(n) for n in range(200)))

    assert answers == [[b"OK", 2 * n, str(2 * n).encode(), 1] for n in range(200)]


async def test_the_urls_database_is_selected(redis_url: str, redis: Redis) -> None:
    key = f"test-{uuid.uuid4()}"
    pipe = RedisPipe(redis_url.rsplit("/", 1)[0] + "/3")
    await pipe.execute(("SET", key, "in db 3"))
    await pipe.close()
    in_db_3 = Redis.from_url(redis_url.rsplit("/", 1)[0] + "/3")

    assert await in_db_3.get(key) == b"in db 3"
    assert await redis.get(key) is None
    await in_db_3.delete(key)
    await in_db_3.aclose()


async def test_a_password_redis_does_not_take_is_refused_not_ignored(redis_url: str) -> None:
    pipe = RedisPipe(redis_url.replace("redis://", "redis://:not-the-password@"))

    with pytest.raises(ResponseError, match="AUTH"):
        await pipe.execute(("PING",))


async def test_error_replies_raise_and_a_missing_script_is_named(pipe: RedisPipe) -> None:
    with pytest.raises(NoScriptError):
        await pipe.execute(("EVALSHA", "0" * 40, 0))
    with pytest.raises(ResponseError, match="unknown command"):
        await pipe.execute(("NOT-A-COMMAND",))

    assert await pipe.execute(("PING",)) == [b"PONG"]  # the connection carries on


async def test_a_connection_killed_by_redis_is_replaced(pipe: RedisPipe, redis: Redis) -> None:
    (client_id,) = await pipe.execute(("CLIENT", "ID"))
    blocked = asyncio.ensure_future(pipe.execute(("BLPOP", f"test-{uuid.uuid4()}", 0.4)))
    await asyncio.sleep(0.05)
    await redis.client_kill_filter(_id=client_id)

    with pytest.raises(ConnectionError):
        await blocked
    (new_id,) = await pipe.execute(("CLIENT", "ID"))
    assert new_id != client_id


async def test_a_reply_that_does_not_come_times_out_and_the_connection_is_replaced(
    pipe: RedisPipe,
) -> None:
    (client_id,) = await pipe.execute(("CLIENT", "ID"))

    with pytest.raises(TimeoutError):
        await pipe.execute(("BLPOP", f"test-{uuid.uuid4()}", 2))  # longer than the timeout
    (new_id,) = await pipe.execute(("CLIENT", "ID"))

    assert new_id != client_id  # the late reply cannot land on a later caller


async def test_an_unreachable_redis_fails_fast() -> None:
    pipe = RedisPipe("redis://127.0.0.1:1/0")  # nothing listens on port 1

    with pytest.raises(ConnectionError):
        await pipe.execute(("PING",))
    with pytest.raises(ConnectionError, match="a moment ago"):
        await pipe.execute(("PING",))  # not tried again at once


def test_url_options_it_cannot_honor_are_refused() -> None:
    with pytest.raises(ValueError, match="socket_timeout"):
        RedisPipe("redis://127.0.0.1:6379/0?socket_timeout=3")
