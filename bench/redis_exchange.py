"""CPU per rate-limit exchange: redis-py's asyncio pipeline against the
service's shared connection (formsapi.kit.redis_pipe), sending what every API
request sends (the `limits` library's two sliding-window scripts and a GET),
from concurrent callers as a worker does. Interleaved rounds; prints each.

    python -m bench.redis_exchange [--redis URL] [--calls N] [--callers C] [--rounds R]
"""

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

import uvloop
from limits import RateLimitItemPerMinute
from limits.aio.storage import RedisStorage
from redis.asyncio import Redis

from formsapi.kit.redis_pipe import RedisPipe


async def cpu_per_call(call: Callable[[], Awaitable[object]], calls: int, callers: int) -> float:
    """Microseconds of this process's CPU per call."""

    async def caller() -> None:
        for _ in range(calls // callers):
            await call()

    started = time.process_time()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return (time.process_time() - started) / calls * 1e6


async def main(url: str, calls: int, callers: int, rounds: int) -> None:
    prefix = f"bench-exchange-{uuid.uuid4().hex[:8]}"
    storage = RedisStorage(f"async+{url}", implementation="redispy", key_prefix=prefix)
    bridge = storage.bridge
    item = RateLimitItemPerMinute(1_000_000_000)
    key = item.key_for("203.0.113.1")
    keys = (
        bridge.prefixed_key(storage._previous_window_key(key)),
        bridge.prefixed_key(storage._current_window_key(key)),
    )
    acquire, window = bridge.lua_acquire_sliding_window, bridge.lua_sliding_window
    epoch = f"{prefix}:auth-epoch"
    client = Redis.from_url(url)
    for script in (acquire, window):
        await client.script_load(script.script)
    pipe = RedisPipe(url)

    async def redis_py() -> object:
        async with client.pipeline(transaction=False) as pipeline:
            pipeline.evalsha(acquire.sha, 2, *keys, item.amount, 60, 1)
            pipeline.evalsha(window.sha, 2, *keys, 60)
            pipeline.get(epoch)
            return await pipeline.execute()

    async def shared_connection() -> object:
        return await pipe.execute(
            ("EVALSHA", acquire.sha, 2, *keys, item.amount, 60, 1),
            ("EVALSHA", window.sha, 2, *keys, 60),
            ("GET", epoch),
        )

    contenders = {"redis-py pipeline": redis_py, "shared connection": shared_connection}
    for call in contenders.values():
        await cpu_per_call(call, min(calls, 1000), callers)  # warm up
    for n in range(rounds):
        for name, call in contenders.items():
            micros = await cpu_per_call(call, calls, callers)
            print(f"round {n + 1}  {name:18} {micros:6.1f} us CPU per exchange")
    await client.delete(*keys)
    await client.aclose()
    await pipe.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--callers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    uvloop.run(main(args.redis, args.calls, args.callers, args.rounds))
