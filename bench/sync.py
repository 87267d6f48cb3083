"""Price reading a whole form through the change feed and through the export,
on the benchmark data set's 500,000-submission form, against a floor that
runs the feed's SQL in process (no HTTP), in interleaved rounds.

    python -m bench.sync                          # both engines, recorded in RESULTS.md
    python -m bench.sync --engines sqlite --rounds 1 --no-record

One client reads the feed from after=0 to the end with limit=1000, as a first
sync would; the export is read whole as NDJSON. The server's peak resident
memory (VmHWM) is read after an export of the 10,000-submission form and again
after the big one: a flat line means the export streams.
"""

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import httpx
import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bench.dataset import ORG_ID
from bench.report import publish, section
from bench.run import ROOT, Server, bench_key, free_port, service_env
from formsapi.db.engine import create_engine, dispose
from formsapi.db.session import create_sessionmaker
from formsapi.submission import repository

BIG_FORM = "frm_bench00"
SMALL_FORM = "frm_bench01"
LIMIT = 1000


def read_feed(client: httpx.Client, form_id: str) -> int:
    after, items = 0, 0
    while True:
        response = client.get(
            f"/v1/forms/{form_id}/submissions/changes", params={"after": after, "limit": LIMIT}
        )
        response.raise_for_status()
        page = orjson.loads(response.content)  # the stdlib's json took a third of a page's time
        items += len(page["data"])
        after = page["next"]
        if not page["hasMore"]:
            return items


def read_export(client: httpx.Client, form_id: str) -> int:
    lines = 0
    with client.stream("GET", f"/v1/forms/{form_id}/submissions/export") as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            lines += chunk.count(b"\n")
    return lines - 1  # the end line


async def feed_floor(sessionmaker: async_sessionmaker[AsyncSession], form_id: str) -> int:
    """The feed's statements, a read session per page as the service opens
    them, rows fetched: no HTTP, no JSON."""
    after, items = 0, 0
    while True:
        async with sessionmaker() as session:
            page, more = await repository.changes_after(session, ORG_ID, form_id, after, LIMIT)
            await repository.positions(session, ORG_ID, form_id)
        items += len(page)
        if not more:
            return items
        after = page[-1][5]


def timed(read: Callable[[], int]) -> tuple[int, float]:
    started = time.perf_counter()
    items = read()
    return items, time.perf_counter() - started


def peak_rss_mb(server: Server) -> float:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert match, "a Linux /proc"
    return int(match.group(1)) / 1024


def engine_rows(engine: str, url: str, args: argparse.Namespace) -> list[str]:
    env = service_env(url, args.redis)
    secret = bench_key(env, "sync", ["submissions:read"])
    port = free_port()
    binary = str(Path(sys.executable).parent / "formsapi")
    server = Server([binary, "serve", "--port", str(port), "--workers", "1"], env, port)
    rows = []
    # The floor's engine lives through the rounds, as the server's does.
    runner = asyncio.Runner()
    floor_engine = create_engine(url)
    sessionmaker = create_sessionmaker(floor_engine)
    runner.run(feed_floor(sessionmaker, SMALL_FORM))
    try:
        headers = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as c:
            small, _ = timed(lambda: read_export(c, SMALL_FORM))
            rss_small = peak_rss_mb(server)
            feed, floor, export = [], [], []
            for _ in range(args.rounds):
                items, seconds = timed(lambda: read_feed(c, BIG_FORM))
                feed.append(items / seconds)
                floor_items, seconds = timed(lambda: runner.run(feed_floor(sessionmaker, BIG_FORM)))
                assert floor_items == items, (floor_items, items)
                floor.append(floor_items / seconds)
                lines, seconds = timed(lambda: read_export(c, BIG_FORM))
                assert lines == items, (lines, items)
                export.append(lines / seconds)
                log(
                    f"{engine}: feed {feed[-1]:,.0f}/s, floor {floor[-1]:,.0f}/s, "
                    f"export {export[-1]:,.0f}/s ({items:,} submissions)"
                )
            rss_big = peak_rss_mb(server)
    finally:
        server.stop()
        runner.run(dispose(floor_engine))
        runner.close()
    f, fl, e = median(feed), median(floor), median(export)
    rows.append(
        f"| {engine} | {items:,} | {f:,.0f} | {fl:,.0f} | {fl / f:.2f}x | {e:,.0f} "
        f"| {rss_small:.0f} MB ({small:,} rows) | {rss_big:.0f} MB |"
    )
    return rows


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def per_engine(
    doc: str, rows_of: Callable[[str, str, argparse.Namespace], list[str]]
) -> tuple[argparse.Namespace, list[str]]:
    """The options every sync benchmark takes, and the table rows `rows_of`
    gives for each engine asked for."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--sqlite", default=str(ROOT / "data" / "bench.db"))
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--engines", nargs="+", default=["postgresql", "sqlite"], choices=["postgresql", "sqlite"]
    )
    parser.add_argument("--rounds", type=int, default=3, help="the median round is reported")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    rows = []
    for engine in args.engines:
        url = args.postgres if engine == "postgresql" else f"sqlite:///{args.sqlite}"
        rows += rows_of(engine, url, args)
    return args, rows


def main() -> None:
    args, rows = per_engine(__doc__, engine_rows)
    header = [
        "engine",
        "submissions",
        "feed /s (limit 1000)",
        "floor /s (same SQL, no HTTP)",
        "floor / feed",
        "export NDJSON rows/s",
        "server peak RSS after the small export",
        "after the big one",
    ]
    note = f"Median of {args.rounds} interleaved rounds; one client, one server worker."
    publish(section("the change feed and the export", note, header, rows), not args.no_record)


if __name__ == "__main__":
    main()
