"""Compare this checkout with another build of the service (an earlier commit
in its own checkout and virtualenv, on its own copy of the data set): the same
wrk scenarios against both servers, side by side, in interleaved rounds.

    git worktree add /tmp/old <commit> && (cd /tmp/old && python3 -m venv .venv \\
        && .venv/bin/pip install -e . && createdb -h 127.0.0.1 -U postgres bench_old \\
        && .venv/bin/python -m bench.dataset --postgres postgresql://postgres@127.0.0.1/bench_old)
    python -m bench.compare --other /tmp/old \\
        --other-postgres postgresql://postgres@127.0.0.1/bench_old \\
        --scenarios post_submission page1_50 since_9pct page1000

PostgreSQL runs with autovacuum off on CI machines, so both databases are
vacuumed (VACUUM ANALYZE) before every round.
"""

import argparse
import subprocess
import sys
from pathlib import Path
from statistics import median

from bench import post_floor
from bench.dataset import ORG_ID
from bench.report import publish, section
from bench.run import (
    BIG_FORM,
    KEYED,
    POST_BODIES,
    ROOT,
    SCENARIOS,
    Server,
    bench_key,
    free_port,
    pgbench,
    service_env,
    wrk,
)

# Posts one transaction writes in the batch floor: what 32 connections
# spread over 2 workers leave each process's batch at most.
FLOOR_BATCH = 16


def vacuum(url: str) -> None:
    if url.startswith("postgresql"):
        database = url.rsplit("/", 1)[1]
        subprocess.run(
            [
                "psql",
                "-q",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                database,
                "-c",
                "VACUUM ANALYZE",
            ],
            check=True,
        )


def start(
    binary: str, url: str, args: argparse.Namespace, this: bool
) -> tuple[Server, dict[str, str]]:
    env = service_env(url, args.redis)
    scopes = ["forms:read", "submissions:read", "submissions:write"]
    # The other build's key by its own CLI: its schema may differ from ours.
    secret = bench_key(env, "compare", scopes, None if this else binary)
    port = free_port()
    argv = [binary, "serve", "--port", str(port), "--workers", str(args.workers), "--no-access-log"]
    return Server(argv, env, port), {"Authorization": f"Bearer {secret}"}


def compare(engine: str, urls: dict[str, str], args: argparse.Namespace) -> list[str]:
    binaries = {
        "this": str(Path(sys.executable).parent / "formsapi"),
        "other": str(args.other / ".venv" / "bin" / "formsapi"),
    }
    servers: dict[str, tuple[Server, dict[str, str]]] = {}
    rows = []
    try:
        for build in ("this", "other"):
            servers[build] = start(binaries[build], urls[build], args, build == "this")
        for scenario in args.scenarios:
            path, _ = SCENARIOS[scenario]
            rates: dict[str, list[float]] = {"this": [], "other": []}
            p99s: dict[str, list[float]] = {"this": [], "other": []}
            floors: dict[str, list[float]] = {
                "per post": [],
                f"batch of {FLOOR_BATCH}": [],
                f"one statement, batch of {FLOOR_BATCH}": [],
            }
            with_floor = scenario == "post_submission" and engine == "postgresql"
            for round_ in range(args.rounds):
                # Alternate who goes first: the machine drifts within a round too.
                order = ("this", "other") if round_ % 2 == 0 else ("other", "this")
                for build in order:
                    vacuum(urls[build])  # after the load and every write round
                    server, headers = servers[build]
                    url = f"http://127.0.0.1:{server.port}{path}"
                    body = POST_BODIES.get(scenario)
                    keyed = scenario in KEYED
                    if args.warmup:
                        wrk(url, args.connections, args.warmup, headers, body, keyed)
                    result = wrk(url, args.connections, args.duration, headers, body, keyed)
                    assert result["non_2xx"] == 0, (build, scenario, result)
                    rates[build].append(result["rps"])
                    p99s[build].append(result["p99_ms"])
                if with_floor:
                    # The same transaction as the service's, run by pgbench on
                    # this build's database, in the same round.
                    database = urls["this"].rsplit("/", 1)[1]
                    answers = POST_BODIES[scenario]["answers"]
                    scripts = {
                        "per post": (post_floor.script, 1),
                        f"batch of {FLOOR_BATCH}": (post_floor.script, FLOOR_BATCH),
                        f"one statement, batch of {FLOOR_BATCH}": (post_floor.at_once, FLOOR_BATCH),
                    }
                    for name, (make, size) in scripts.items():
                        vacuum(urls["this"])
                        script = make(ORG_ID, BIG_FORM, answers, size)
                        tps = pgbench(database, script, args.connections, args.duration)
                        floors[name].append(tps * size)
                print(
                    f"{engine} {scenario}: this {rates['this'][-1]:,.0f}/s, "
                    f"other {rates['other'][-1]:,.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
            this, other = median(rates["this"]), median(rates["other"])
            # Each round's pair ran a minute apart at most: their ratio is
            # steadier than the ratio of medians taken across rounds.
            ratio = median(a / b for a, b in zip(rates["this"], rates["other"], strict=True))
            rounds = " / ".join(
                f"{a:,.0f} vs {b:,.0f}" for a, b in zip(rates["this"], rates["other"], strict=True)
            )
            p99 = f"{median(p99s['this']):.1f} / {median(p99s['other']):.1f}"
            rows.append(
                f"| {engine} | {scenario} | {this:,.1f} | {other:,.1f} | {ratio:.0%} "
                f"| {p99} | {rounds} |"
            )
            for name, posts in floors.items():
                if posts:
                    each = " / ".join(f"{n:,.0f}" for n in posts)
                    rows.append(
                        f"| {engine} | pgbench floor, {name} (posts/s) | {median(posts):,.1f} "
                        f"| | {this / median(posts):.0%} of it | | {each} |"
                    )
    finally:
        for server, _ in servers.values():
            server.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the other build's checkout")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--other-postgres", help="the other build's copy of the data set")
    parser.add_argument("--sqlite", default=str(ROOT / "data" / "bench.db"))
    parser.add_argument("--other-sqlite", help="the other build's SQLite copy")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--scenarios", nargs="+", default=["post_submission"], choices=SCENARIOS)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(args.other), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    rows = []
    if args.other_postgres:
        rows += compare("postgresql", {"this": args.postgres, "other": args.other_postgres}, args)
    if args.other_sqlite:
        urls = {"this": f"sqlite:///{args.sqlite}", "other": f"sqlite:///{args.other_sqlite}"}
        rows += compare("sqlite", urls, args)
    header = [
        "engine",
        "scenario",
        "this req/s (median)",
        "other req/s (median)",
        "this / other (median of the rounds' ratios)",
        "p99 ms this / other (median)",
        "rounds (this vs other)",
    ]
    note = (
        f"{args.connections} connections, {args.workers} workers each, "
        f"median of {args.rounds} interleaved rounds of {args.duration:g} s; "
        "PostgreSQL vacuumed (VACUUM ANALYZE) before every round."
    )
    title = f"this checkout against {commit}"
    publish(section(title, note, header, rows), not args.no_record)


if __name__ == "__main__":
    main()
