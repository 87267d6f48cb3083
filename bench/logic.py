"""What the form language costs: posting to a form of twenty blocks with ten
rules and two variables against the same form without them, the hosted
page's render time for that form, and the rule evaluator itself.

- posting: wrk posts one answer set to each form in turn (16 connections,
  10 s a round, `formsapi serve --workers 2` unless told otherwise, with
  Redis), on PostgreSQL (VACUUM ANALYZE before every round: autovacuum is off
  on this machine) and on SQLite;
- page: wrk GETs the logic form's hosted page and posts its first page
  (1 connection: the latency is the server's time plus loopback);
- evaluator: validate_submission on both forms in this process, per call.
"""

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from statistics import median, quantiles
from typing import Any

import httpx

from bench.report import publish, section
from bench.run import Server, free_port, wrk
from bench.webhooks import FORMSAPI, _env, _fresh_database, _setup, _vacuum
from formsapi.db.migrations import migrate
from formsapi.kit.time import utcnow
from formsapi.language.blocks import BlockList
from formsapi.language.compiled import Compiled
from formsapi.language.definition import Definition
from formsapi.submission.validation import validate_submission

DATABASE = "bench_logic"
OPTIONS = [{"value": v, "label": v.title()} for v in ("red", "green", "blue", "other")]


def _blocks() -> list[dict[str, Any]]:
    """Twenty questions over three pages."""
    blocks: list[dict[str, Any]] = [
        {"type": "short_text", "key": "name", "title": "Name", "required": True},
        {"type": "email", "key": "email", "title": "Email", "required": True},
        {"type": "single_choice", "key": "plan", "title": "Plan", "options": OPTIONS},
        {"type": "number", "key": "size", "title": "Size", "min": 1, "max": 10_000},
        {"type": "multiple_choice", "key": "colors", "title": "Colors", "options": OPTIONS},
        {"type": "nps", "key": "nps", "title": "Recommend us?"},
        {"type": "page_break", "key": "second"},
    ]
    blocks += [
        {"type": "rating", "key": f"r{i}", "title": f"Rate {i}, {{{{name}}}}", "scale": 5}
        for i in range(8)
    ]
    blocks.append({"type": "page_break", "key": "third"})
    blocks += [{"type": "short_text", "key": f"t{i}", "title": f"Tell us {i}"} for i in range(6)]
    return blocks


def _var(key: str) -> dict[str, str]:
    return {"var": key}


def _logic() -> dict[str, Any]:
    var = _var
    return {
        "variables": [
            {"name": "score"},
            {"name": "total", "value": {"+": [var(f"r{i}") for i in range(8)]}},
        ],
        "logic": [
            *(
                {"if": {">=": [var(f"r{i}"), 4]},
                 "then": [{"set": "score", "to": {"+": [var("vars.score"), 1]}}]}
                for i in range(6)
            ),
            {"if": {"in": ["red", var("colors")]}, "then": [{"set": "score", "to": 0}]},
            {"if": {"==": [var("plan"), "other"]},
             "then": [{"jump": "third", "after": "plan"}]},
            {"if": {"and": [{">": [var("size"), 500]}, {"<": [var("nps"), 7]}]},
             "then": [{"set": "score", "to": {"-": [var("vars.score"), 1]}}]},
            {"if": {"match": [var("email"), "@example\\.com$"]},
             "then": [{"set": "score", "to": {"*": [var("vars.score"), 2]}}]},
        ],
    }  # fmt: skip


ANSWERS: dict[str, Any] = {
    "name": "Ada",
    "email": "ada@example.com",
    "plan": "green",
    "size": 12,
    "colors": "blue,red",
    "nps": 9,
    **{f"r{i}": 1 + i % 5 for i in range(8)},
    **{f"t{i}": "fine" for i in range(6)},
}


def _forms(base: str, key: str) -> tuple[str, str]:
    """The plain form and the same blocks with logic, both published: their ids."""
    ids = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
        for extra in ({}, _logic()):
            body = {"title": "Bench logic", "blocks": _blocks(), **extra}
            created = client.post("/v1/forms", json=body)
            created.raise_for_status()
            form = created.json()["id"]
            client.patch(f"/v1/forms/{form}", json={"status": "published"}).raise_for_status()
            check = client.post(f"/v1/forms/{form}/submissions", json={"answers": ANSWERS})
            assert check.status_code == 201, check.text
            ids.append(form)
    return ids[0], ids[1]


async def posting(
    url: str | None, env: dict[str, str], key: str, rounds: int, seconds: float, workers: int = 2
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], dict[str, float]]:
    """Posts a second to the plain and the logic form in turn, and their p99
    (ms); then the logic form's page: GET and a first page's post."""
    port = free_port()
    argv = [FORMSAPI, "serve", "--port", str(port), "--workers", str(workers), "--no-access-log"]
    server = Server(argv, env, port)
    rates, tails = [], []
    try:
        base = f"http://127.0.0.1:{port}"
        plain, logic = await asyncio.to_thread(_forms, base, key)
        headers = {"Authorization": f"Bearer {key}"}
        for round_ in range(rounds):
            pair = {}
            # Each round starts with the other form: the table grows as it runs.
            for form in (plain, logic) if round_ % 2 == 0 else (logic, plain):
                if url is not None:
                    await _vacuum(url)
                pair[form] = await asyncio.to_thread(
                    wrk,
                    f"{base}/v1/forms/{form}/submissions",
                    16,
                    seconds,
                    headers,
                    {"answers": ANSWERS},
                )
            refused = {form: found["non_2xx"] for form, found in pair.items() if found["non_2xx"]}
            assert not refused, f"posts refused: {refused}"  # only 201s are measured
            rates.append((pair[plain]["rps"], pair[logic]["rps"]))
            tails.append((pair[plain]["p99_ms"], pair[logic]["p99_ms"]))
        page = await asyncio.to_thread(wrk, f"{base}/f/{logic}", 1, seconds, {})
    finally:
        server.stop()
    return rates, tails, {"p50": page["p50_ms"], "p99": page["p99_ms"], "rps": page["rps"]}


def evaluator(calls: int) -> dict[str, float]:
    """µs per validate_submission call, without and with the logic."""
    blocks = BlockList.validate_python(_blocks())
    today = utcnow().date()
    found = {}
    for name, definition in (("plain", Definition()), ("logic", Definition(**_logic()))):
        compiled = Compiled(1, blocks, definition)
        validate_submission(compiled, ANSWERS, today)  # laid out once, as the service keeps it
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            validate_submission(compiled, ANSWERS, today)
            times.append(time.perf_counter() - start)
        found[name] = median(times) * 1e6
        found[f"{name}_p99"] = quantiles(times, n=100)[98] * 1e6
    return found


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10, help="per wrk run")
    parser.add_argument("--engines", nargs="+", default=["postgresql", "sqlite"])
    parser.add_argument("--workers", type=int, default=2, help="of the server posted to")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()

    rows = []
    calls = evaluator(args.calls)
    rows.append(
        f"| evaluator (this process) | validate_submission: {calls['plain']:.0f} µs plain, "
        f"{calls['logic']:.0f} µs with the logic (p99 {calls['plain_p99']:.0f} / "
        f"{calls['logic_p99']:.0f}) | {calls['logic'] / calls['plain']:.2f} | |"
    )
    with tempfile.TemporaryDirectory() as directory:
        engines: list[tuple[str, str | None, str]] = []
        if "postgresql" in args.engines:
            engines.append(("postgresql", await _fresh_database(args.server), ""))
        if "sqlite" in args.engines:
            engines.append(("sqlite", None, f"sqlite:///{Path(directory) / 'logic.db'}"))
        for engine, pg_url, sqlite_url in engines:
            url = pg_url or sqlite_url
            await asyncio.to_thread(migrate, url)
            env = _env(url, webhook_worker="off")
            key = _setup(env)
            rates, tails, page = await posting(
                pg_url, env, key, args.rounds, args.seconds, args.workers
            )
            ratios = [logic / plain for plain, logic in rates]
            rows.append(
                f"| posting, {engine}, 16 connections, {args.workers} workers "
                "(plain / logic, per round) | "
                + ", ".join(f"{a:,.0f} / {b:,.0f}" for a, b in rates)
                + f" posts/s; p99 {', '.join(f'{a:.0f} / {b:.0f}' for a, b in tails)} ms "
                f"| median ratio {median(ratios):.2f} (promise: 0.91 or more) | |"
            )
            rows.append(
                f"| hosted page with logic, {engine}, GET, 1 connection | p50 {page['p50']:.1f} ms, "
                f"p99 {page['p99']:.1f} ms ({page['rps']:,.0f}/s) | promise: p99 under 20 ms | |"
            )
    note = (
        "A form of 20 questions on three pages, and the same blocks with 2 variables and "
        "10 rules (6 scoring, a reset, a jump, a combined condition, a regular "
        f"expression). `formsapi serve --workers {args.workers}` with Redis; PostgreSQL "
        "vacuumed and analyzed before every round (autovacuum is off on this machine). The page's "
        "time is wrk's latency with one connection: the server's time plus loopback."
    )
    publish(
        section(
            "the form language's cost (issue 26)",
            note,
            ["measure", "result", "ratio or promise", ""],
            rows,
        ),
        keep=not args.no_record,
    )


if __name__ == "__main__":
    os.environ.setdefault("FORMSAPI_BENCH_REDIS", "redis://127.0.0.1:6379/0")
    asyncio.run(main())
