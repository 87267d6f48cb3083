"""Price the Python client and `formsapi-sync` against floors measured in the
same run, on the benchmark data set (one server worker on each engine):

- first copy: `formsapi-sync --form frm_bench00` (500,000 submissions) into
  a new SQLite file and into a new PostgreSQL database, end to end (the
  process started, the copy committed); the floor is reading the same feed
  with httpx and orjson and nothing else;
- incremental: 1,000 new submissions posted, then a `formsapi-sync` run that
  copies them (a whole process, as a cron job runs it);
- client overhead: page 1 of 100 submissions of the big form, one call after
  another, through `Client.submissions.list` and through a plain
  `httpx.Client.get(...).json()`.

    python -m bench.sync_tool                       # recorded in RESULTS.md
    python -m bench.sync_tool --engines postgresql --rounds 1 --no-record

The rounds interleave the targets (the machine drifts); the median is
reported. The incremental posts leave the big form 1,000 larger per round.
"""

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.report import publish, section
from bench.run import POST_BODIES, Server, bench_key, free_port, service_env
from bench.sync import BIG_FORM, per_engine, read_feed
from formsapi_client import Client

SYNC = str(Path(sys.executable).parent / "formsapi-sync")
NEW = 1000
CALLS = 300  # page-of-100 calls per client overhead measure


def copy(key: str, base: str, target: str, *args: str) -> float:
    """Seconds one `formsapi-sync` run takes, start to exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [SYNC, "--to", target, "--url", base, *args],
        env={**os.environ, "FORMSAPI_API_KEY": key},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"formsapi-sync failed:\n{done.stderr}")
    return seconds


async def fresh_postgres(admin_url: str, name: str) -> str:
    server = admin_url.rsplit("/", 1)[0]
    connection = await asyncpg.connect(f"{server}/postgres")
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return f"{server}/{name}"


def post_new(client: httpx.Client, form_id: str, count: int) -> None:
    for _ in range(count):
        client.post(
            f"/v1/forms/{form_id}/submissions", json=POST_BODIES["post_submission"]
        ).raise_for_status()


def per_call(call: Callable[[], object]) -> float:
    """Calls a second, after a few to warm up."""
    for _ in range(10):
        call()
    started = time.perf_counter()
    for _ in range(CALLS):
        call()
    return CALLS / (time.perf_counter() - started)


def engine_rows(engine: str, url: str, args: argparse.Namespace) -> list[str]:
    env = service_env(url, args.redis)
    key = bench_key(env, "sync tool", ["forms:read", "submissions:read", "submissions:write"])
    port = free_port()
    binary = str(Path(sys.executable).parent / "formsapi")
    server = Server([binary, "serve", "--port", str(port), "--workers", "1"], env, port)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {key}"}
    feed, to_sqlite, to_postgres, incremental, plain, typed = [], [], [], [], [], []
    try:
        with (
            httpx.Client(base_url=base, headers=headers, timeout=60) as raw,
            Client(base, key) as client,
            TemporaryDirectory() as scratch,
        ):
            page = f"/v1/forms/{BIG_FORM}/submissions"
            for n in range(args.rounds):
                started = time.perf_counter()
                items = read_feed(raw, BIG_FORM)
                feed.append(items / (time.perf_counter() - started))
                sqlite = f"sqlite:///{scratch}/copy-{n}.db"
                to_sqlite.append(items / copy(key, base, sqlite, "--form", BIG_FORM))
                postgres = asyncio.run(fresh_postgres(args.postgres, "bench_copy"))
                to_postgres.append(items / copy(key, base, postgres, "--form", BIG_FORM))
                post_new(raw, BIG_FORM, NEW)
                incremental.append(copy(key, base, sqlite, "--form", BIG_FORM))
                plain.append(per_call(lambda: raw.get(page, params={"limit": 100}).json()))
                typed.append(per_call(lambda: client.submissions.list(BIG_FORM, limit=100)))
                log(
                    f"{engine}: feed {feed[-1]:,.0f}/s, to SQLite {to_sqlite[-1]:,.0f}/s, "
                    f"to PostgreSQL {to_postgres[-1]:,.0f}/s, {NEW:,} new in "
                    f"{incremental[-1]:.2f} s, page of 100: httpx {plain[-1]:,.0f}/s, "
                    f"client {typed[-1]:,.0f}/s ({items:,} submissions)"
                )
    finally:
        server.stop()
    f = median(feed)
    return [
        f"| {engine} | {items:,} | {f:,.0f} | {median(to_sqlite):,.0f} "
        f"({f / median(to_sqlite):.2f}x) | {median(to_postgres):,.0f} "
        f"({f / median(to_postgres):.2f}x) | {median(incremental):.2f} s "
        f"| {median(plain):,.0f} / {median(typed):,.0f} ({median(typed) / median(plain):.2f}) |"
    ]


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    args, rows = per_engine(__doc__, engine_rows)
    header = [
        "server engine",
        "submissions",
        "feed read /s (httpx + orjson)",
        "first copy into SQLite /s (feed / copy)",
        "first copy into PostgreSQL /s (feed / copy)",
        f"incremental run, {NEW:,} new",
        "page of 100 /s: httpx / client (ratio)",
    ]
    note = (
        f"Median of {args.rounds} interleaved rounds; one server worker; each copy is a whole "
        "`formsapi-sync --form frm_bench00` process into a new SQLite file or PostgreSQL database."
    )
    publish(section("the client and formsapi-sync", note, header, rows), not args.no_record)


if __name__ == "__main__":
    main()
