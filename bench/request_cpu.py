"""CPU per request of the app itself, in one process, no socket: requests that
stop early (a missing key's 401, a settings page's redirect to sign-in, a
404) cost what every request pays before its handler, routing first. Prints
this process's CPU microseconds per request, the best of five rounds.

    .venv/bin/python -m bench.request_cpu

Run it on each of two checkouts to compare them; run on a quiet machine.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx

from formsapi.app import create_app
from formsapi.config import Settings
from formsapi.db import migrate

PATHS = [
    "/v1/forms",
    "/v1/webhook-endpoints",
    "/settings/keys",
    "/settings/webhooks",
    "/f/frm_missing",
    "/nothing",
]


async def measure(url: str, paths: list[str], requests: int) -> None:
    app = create_app(Settings(database_url=url, redis_url=None, rate_limit_enabled=False))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for path in paths:
                for _ in range(requests // 10):  # warm
                    await client.get(path)
                rounds = []
                for _ in range(5):
                    started = time.process_time()
                    for _ in range(requests):
                        answer = await client.get(path)
                    rounds.append((time.process_time() - started) / requests * 1e6)
                print(f"{path:24} {answer.status_code}  {min(rounds):6.0f} µs CPU a request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="per round and path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'bench.db'}"
        migrate(url)
        asyncio.run(measure(url, PATHS, args.requests))


if __name__ == "__main__":
    main()
