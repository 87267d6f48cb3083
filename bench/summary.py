"""What an answer summary filtered by one answer costs, against the best
single SQL statement for it: the service's summary of the bench form
(`summary.service.summary`, in this process, its own read session) and one
statement counting the same (key, value) pairs over the same rows, run
straight on the driver (asyncpg, sqlite3), in interleaved rounds, on the data
set of bench/dataset.py. A filter's figures are counted from the rows it
matches (the kept answer counts cannot split by answer), so the statement is
its floor. PostgreSQL is vacuumed first (autovacuum is off on this machine).

Unfiltered and date-range summaries, which add up kept counts, are measured
over HTTP at 32 connections by `bench.run --scenarios summary summary_30d`.
"""

import argparse
import asyncio
import sqlite3
import time
from statistics import median

import asyncpg  # type: ignore[import-untyped]

from bench.dataset import ORG_ID
from bench.report import publish, section
from bench.run import BIG_FORM
from formsapi.db import create_engine, create_read_sessionmaker
from formsapi.summary import service

# The bench form's keys whose values a summary counts, and the filter.
VALUED = ("plan", "satisfaction", "seats", "features")
ANSWER = ("plan", "team")
_PAIRS = ", ".join(f"'{key}'" for key in VALUED)
POSTGRES_SQL = f"""
SELECT kv.key, CASE WHEN kv.key IN ({_PAIRS}) THEN kv.value::text END, count(*)
FROM submissions s, jsonb_each(s.answers) kv
WHERE s.organization_id = $1 AND s.form_id = $2 AND s.answers->>'{ANSWER[0]}' = $3
GROUP BY 1, 2"""  # noqa: S608 - constants of ours
SQLITE_SQL = f"""
SELECT kv.key, CASE WHEN kv.key IN ({_PAIRS}) THEN json_quote(kv.value) END, count(*)
FROM submissions s, json_each(s.answers) kv
WHERE s.organization_id = ? AND s.form_id = ? AND json_extract(s.answers, '$."{ANSWER[0]}"') = ?
GROUP BY 1, 2"""  # noqa: S608 - constants of ours


async def _service(url: str) -> tuple[float, int]:
    engine = create_engine(url)
    try:
        async with create_read_sessionmaker(engine)() as session:
            service.MADE.clear()  # each round counts, as a first ask does
            started = time.perf_counter()
            found = await service.summary(session, ORG_ID, BIG_FORM, answer=":".join(ANSWER))
            return time.perf_counter() - started, found["submissions"]
    finally:
        await engine.dispose()


async def _statement(url: str) -> float:
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.split("///", 1)[1])
        started = time.perf_counter()
        connection.execute(SQLITE_SQL, (ORG_ID, BIG_FORM, ANSWER[1])).fetchall()
        elapsed = time.perf_counter() - started
        connection.close()
        return elapsed
    connection = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        await connection.fetch(POSTGRES_SQL, ORG_ID, BIG_FORM, ANSWER[1])
        return time.perf_counter() - started
    finally:
        await connection.close()


async def _vacuum(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


async def main_async(args: argparse.Namespace) -> None:
    rows = []
    for engine, url in (("postgresql", args.postgres), ("sqlite", f"sqlite:///{args.sqlite}")):
        if engine == "postgresql":
            await _vacuum(url)
        await _service(url)  # warm: the form compiled, pages cached
        services, statements, matched = [], [], 0
        for round_ in range(args.rounds):
            order = (0, 1) if round_ % 2 == 0 else (1, 0)
            for which in order:
                if which == 0:
                    elapsed, matched = await _service(url)
                    services.append(elapsed)
                else:
                    statements.append(await _statement(url))
            print(f"{engine}: service {services[-1]:.2f} s, statement {statements[-1]:.2f} s")
        rows.append(
            f"| {engine} | answer={':'.join(ANSWER)} | {matched:,} | "
            f"{median(services) * 1000:,.0f} | {median(statements) * 1000:,.0f} | "
            f"{median(services) / median(statements):.2f}x |"
        )
    note = (
        f"Median of {args.rounds} interleaved rounds, one request at a time: the summary "
        "in this process (its read session, the form's lookup and the figures included) "
        "and the one statement on the driver. PostgreSQL vacuumed (VACUUM ANALYZE) first."
    )
    header = ["engine", "filter", "matching", "summary ms", "statement ms", "summary / statement"]
    publish(section("an answer summary filtered by one answer", note, header, rows), args.record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--sqlite", default="bench/data/bench.db")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", dest="record", action="store_false")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
