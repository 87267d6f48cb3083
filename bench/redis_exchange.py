"""CPU per rate-limit exchange: redis-py's asyncio client against the
service's shared connection (formsapi.kit.redis_pipe), sending what every API
request sends (the limiter's sliding-window script, which also reads the auth
epoch), from concurrent callers as a worker does. Interleaved rounds; prints each.

    python -m bench.redis_exchange [--redis URL] [--calls N] [--callers C] [--rounds R]
"""

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

import uvloop
from redis.asyncio import Redis

from formsapi.kit.redis_pipe import RedisPipe
from formsapi.ratelimit.service import SCRIPT, SCRIPT_SHA


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
    keys = (f"{prefix}:limit:w/-1", f"{prefix}:limit:w", f"{prefix}:auth-epoch")
    arguments = (1_000_000_000, 60_000, 1)
    client = Redis.from_url(url)
    await client.script_load(SCRIPT)
    pipe = RedisPipe(url)

    async def redis_py() -> object:
        return await client.evalsha(SCRIPT_SHA, len(keys), *keys, *arguments)

    async def shared_connection() -> object:
        return await pipe.execute(("EVALSHA", SCRIPT_SHA, len(keys), *keys, *arguments))

    contenders = {"redis-py client": redis_py, "shared connection": shared_connection}
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
