"""What an answer summary filtered by one answer costs, against the best
single SQL statement for it: the service's summary of the bench form
(`summary.service.summary`, in this process, its own read session) and one
statement counting the same (key, value) pairs over the same rows, run
straight on the driver (asyncpg, sqlite3), in interleaved rounds, on the data
set of bench/dataset.py. PostgreSQL is vacuumed first (autovacuum is off on
this machine).

The summary is timed five ways: the first ask of a process that has not
held the form, which reads its submissions into memory (summary.held) after
counting in the database; the first ask of a process that warmed its largest
forms as it started (`service.warm`, timed as `warming`); the first ask of a
process that finds the form stored on disk by a process before it
(summary.stored: read from its file and the changes since; the storing
timed as `storing`); an ask of another answer after the first, counted from
what is held; and counted by the database, as a form too big to hold is
(`held.HELD` given no room). Each round asks afresh: the summaries made
before are forgotten (`service.MADE`).

Unfiltered and date-range summaries, which add up kept counts, are measured
over HTTP at 32 connections by `bench.run --scenarios summary summary_30d`.
"""

import argparse
import asyncio
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from statistics import median

import asyncpg  # type: ignore[import-untyped]

from bench.dataset import ORG_ID
from bench.report import publish, section
from bench.run import BIG_FORM
from formsapi.config import Settings
from formsapi.db.engine import create_engine
from formsapi.db.session import create_read_sessionmaker
from formsapi.form import service as form_service
from formsapi.summary import held, service, stored

# The bench form's keys whose values a summary counts, and the filter.
VALUED = ("plan", "satisfaction", "seats", "features")
ANSWER = ("plan", "team")
ROOM = held.HELD.capacity
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


async def _service(
    url: str, how: str, warm_from: int, store: stored.Store
) -> tuple[dict[str, float], int]:
    """One summary asked `how`: first (nothing held: the database counts,
    and the form is read into memory after it, timed as `reading`), warmed
    (after the forms of at least `warm_from` submissions are read, timed as
    `warming`), stored (nothing held, the form stored in `store`), held
    (after an ask of another answer, once the form is read), or database
    (nothing may be held)."""
    engine = create_engine(url)
    held.HELD = held.Held(0 if how == "database" else ROOM, store if how == "stored" else None)
    spent: dict[str, float] = {}
    try:
        sessions = create_read_sessionmaker(engine)
        if how == "warmed":
            started = time.perf_counter()
            await service.warm(sessions, warm_from)
            spent["warming"] = time.perf_counter() - started
            if not held.HELD.holds(ORG_ID, BIG_FORM):
                raise SystemExit("the bench form was not warmed: its first ask would not be")
        async with sessions() as session:
            if how == "held":
                await service.summary(session, ORG_ID, BIG_FORM, answer="plan:business")
                await held.HELD.settled()
            service.MADE.clear()  # each round counts, as a first ask does
            started = time.perf_counter()
            found = await service.summary(session, ORG_ID, BIG_FORM, answer=":".join(ANSWER))
            spent[how] = time.perf_counter() - started
            if how == "first":
                await held.HELD.settled()
                spent["reading"] = time.perf_counter() - started - spent[how]
            return spent, found["submissions"]
    finally:
        await engine.dispose()


async def _store(url: str, store: stored.Store, warm_from: int) -> dict[str, float]:
    """Store the forms of at least `warm_from` submissions as a warming round
    does: how long the bench form's storing took, once it was read; and a
    next process's warming from those files (`warming, stored`)."""
    engine = create_engine(url)
    spent: dict[str, float] = {}
    try:
        sessions = create_read_sessionmaker(engine)
        held.HELD = held.Held(ROOM, store)
        async with sessions() as session:
            service.prepare(session, await form_service.get(session, ORG_ID, BIG_FORM))
        await held.HELD.settled()
        started = time.perf_counter()
        await held.HELD.save(ORG_ID, BIG_FORM)
        spent["storing"] = time.perf_counter() - started
        await service.warm(sessions, warm_from)  # and the other forms
        held.HELD = held.Held(ROOM, store)
        started = time.perf_counter()
        await service.warm(sessions, warm_from)
        spent["warming, stored"] = time.perf_counter() - started
        if not store.has((ORG_ID, BIG_FORM)) or not held.HELD.holds(ORG_ID, BIG_FORM):
            raise SystemExit("the bench form was not stored")
        return spent
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


WAYS = ("first", "warmed", "stored", "held", "database")


async def main_async(args: argparse.Namespace) -> None:
    rows = []
    for engine, url in (("postgresql", args.postgres), ("sqlite", f"sqlite:///{args.sqlite}")):
        if engine == "postgresql":
            await _vacuum(url)
        store = stored.Store(Path(tempfile.mkdtemp(prefix="bench-summary-")))
        await _service(url, "database", args.warm_from, store)  # the form compiled, pages cached
        names = (*WAYS, "reading", "warming", "storing", "warming, stored", "statement")
        times: dict[str, list[float]] = {how: [] for how in names}
        for name, elapsed in (await _store(url, store, args.warm_from)).items():
            times[name].append(elapsed)
        matched = 0
        for round_ in range(args.rounds):
            order = [*WAYS, "statement"]
            for how in order if round_ % 2 == 0 else reversed(order):
                if how == "statement":
                    times[how].append(await _statement(url))
                else:
                    spent, matched = await _service(url, how, args.warm_from, store)
                    for name, elapsed in spent.items():
                        times[name].append(elapsed)
            print(engine, ", ".join(f"{how} {spent[-1]:.2f} s" for how, spent in times.items()))
        shutil.rmtree(str(store.directory))
        floor = median(times["statement"])
        rows.append(
            f"| {engine} | answer={':'.join(ANSWER)} | {matched:,} | "
            + " | ".join(
                f"{median(spent) * 1000:,.0f} ({median(spent) / floor:.2f}x)"
                for spent in times.values()
            )
            + " |"
        )
    note = (
        f"Median of {args.rounds} interleaved rounds, one request at a time, in ms (and "
        "against the statement): the summary in this process (its read session, the "
        "form's lookup and the figures included) asked first (counted by the database, "
        "then the form read into memory in the background: `reading`), asked first in "
        f"a process that read its forms of at least {args.warm_from:,} submissions as it "
        "started (`warming`), asked first in a process that finds the form stored on disk "
        "(`storing`: writing its file, once, by the process before; `warming, stored`: a "
        "process's warming, once, with every form stored), asked with the form "
        "held, and counted by the database with nothing held; and the one statement on the "
        "driver. PostgreSQL vacuumed (VACUUM ANALYZE) first."
    )
    header = [
        "engine",
        "filter",
        "matching",
        "first ask",
        "first ask, warmed",
        "first ask, stored",
        "held",
        "database",
        "reading",
        "warming",
        "storing",
        "warming, stored",
        "statement",
    ]
    publish(section("an answer summary filtered by one answer", note, header, rows), args.record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--sqlite", default="bench/data/bench.db")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--warm-from",
        type=int,
        default=Settings.model_fields["summary_warm_from"].default,
        help="the size of form a process reads as it starts (FORMSAPI_SUMMARY_WARM_FROM)",
    )
    parser.add_argument("--no-record", dest="record", action="store_false")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
