"""The shared Redis connection: every caller gets its own replies, whatever
interleaves, and a lost or stuck connection fails its callers and is replaced."""

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import pytest
from redis.asyncio import Redis
from redis.exceptions import NoScriptError, ResponseError

from formsapi.kit.breaker import Open
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.kit.time import shift

RECONNECT_AFTER = 1.0  # the breaker's first cool-down


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


async def test_the_urls_database_and_client_name_are_set(redis_url: str, redis: Redis) -> None:
    key = f"test-{uuid.uuid4()}"
    pipe = RedisPipe(urlunsplit(urlsplit(redis_url)._replace(path="/3", query="client_name=t1")))
    await pipe.execute(("SET", key, "in db 3"))
    assert await pipe.execute(("CLIENT", "GETNAME")) == [b"t1"]
    await pipe.close()
    in_db_3 = Redis.from_url(urlunsplit(urlsplit(redis_url)._replace(path="/3")))

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


async def test_a_connection_killed_by_redis_is_replaced(redis_url: str, redis: Redis) -> None:
    pipe = RedisPipe(redis_url, timeout=30)
    (client_id,) = await pipe.execute(("CLIENT", "ID"))
    blocked = asyncio.ensure_future(pipe.execute(("BLPOP", f"test-{uuid.uuid4()}", 20)))
    await asyncio.sleep(0.05)
    await redis.client_kill_filter(_id=client_id)

    with pytest.raises(ConnectionError):
        await blocked  # at once, not after the BLPOP's 20 s
    (new_id,) = await pipe.execute(("CLIENT", "ID"))
    assert new_id != client_id
    await pipe.close()


async def test_callers_that_give_up_do_not_shift_the_replies_of_others(pipe: RedisPipe) -> None:
    # A request cancelled while it waits (its client went away) leaves its
    # replies to arrive and be dropped; every other caller still gets its own.
    prefix = f"test-{uuid.uuid4()}"
    await pipe.execute(("PING",))  # connected: each caller writes on its first step
    tasks = [
        asyncio.ensure_future(pipe.execute(("SET", f"{prefix}:{n}", n), ("GET", f"{prefix}:{n}")))
        for n in range(90)
    ]
    await asyncio.sleep(0)  # every caller has written its commands
    for task in tasks[::3]:
        task.cancel()
    answers = await asyncio.gather(*tasks, return_exceptions=True)

    for n, answer in enumerate(answers):
        if n % 3 == 0:
            assert isinstance(answer, asyncio.CancelledError)
        else:
            assert answer == [b"OK", str(n).encode()]
    assert await pipe.execute(("GET", f"{prefix}:0")) == [b"0"]  # the cancelled ones ran


async def test_a_reply_that_does_not_come_opens_the_breaker_then_a_new_connection_serves(
    pipe: RedisPipe,
) -> None:
    (client_id,) = await pipe.execute(("CLIENT", "ID"))

    with pytest.raises(TimeoutError):
        await pipe.execute(("BLPOP", f"test-{uuid.uuid4()}", 2))  # longer than the timeout
    with pytest.raises(Open):
        await pipe.execute(("CLIENT", "ID"))  # not tried: Redis failed a moment ago
    with shift(timedelta(seconds=RECONNECT_AFTER)):
        (new_id,) = await pipe.execute(("CLIENT", "ID"))  # the one try after the cool-down
        (same_id,) = await pipe.execute(("CLIENT", "ID"))  # and closed again

    assert new_id == same_id != client_id  # the late reply cannot land on a later caller


async def test_an_unreachable_redis_fails_fast_and_is_tried_again_later() -> None:
    pipe = RedisPipe("redis://127.0.0.1:1/0")  # nothing listens on port 1

    with pytest.raises(ConnectionError):
        await pipe.execute(("PING",))
    with pytest.raises(Open, match="a moment ago"):
        await pipe.execute(("PING",))  # not tried again at once
    with shift(timedelta(seconds=RECONNECT_AFTER)), pytest.raises(ConnectionRefusedError):
        await pipe.execute(("PING",))  # tried again: still refused
    with shift(timedelta(seconds=RECONNECT_AFTER)), pytest.raises(Open):
        await pipe.execute(("PING",))  # the cool-down has doubled


async def test_the_urls_timeout_is_honored(redis_url: str) -> None:
    query = "socket_timeout=0.2&max_connections=50"
    pipe = RedisPipe(urlunsplit(urlsplit(redis_url)._replace(query=query)), timeout=30)

    with pytest.raises(TimeoutError):
        await pipe.execute(("BLPOP", f"test-{uuid.uuid4()}", 1))  # past 0.2 s, not 30
    await pipe.close()


def test_url_options_it_cannot_honor_are_refused() -> None:
    with pytest.raises(ValueError, match="protocol"):
        RedisPipe("redis://127.0.0.1:6379/0?protocol=3")  # replies are read as RESP2


async def test_callers_queued_behind_a_hanging_connect_fail_at_once_when_it_fails() -> None:
    # A server that takes the connection (the kernel's backlog) and never
    # answers: the AUTH the URL asks for waits out the timeout.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    pipe = RedisPipe(f"redis://:secret@127.0.0.1:{port}/0", timeout=0.3)

    answers = await asyncio.gather(
        *(pipe.execute(("PING",)) for _ in range(6)), return_exceptions=True
    )

    kinds = sorted(type(answer).__name__ for answer in answers)
    assert kinds == ["Open"] * 5 + ["TimeoutError"]  # one waited; the rest were not tried
    silent.close()
    await pipe.close()
