"""The benchmark kit runs end to end on a tiny data set, so it cannot rot.

The kit itself (a million submissions, 15 s per scenario) is run by hand; see
bench/README.md. This checks that its data set builder, runner, floors and
report still work against real servers, PostgreSQL, Redis, wrk and pgbench.
"""

import json
import re
from pathlib import Path

from tests.support.bench_kit import kit, needs, tiny_data_set


def test_the_kit_builds_runs_and_reports(
    scratch_database: str, redis_url: str, tmp_path: Path
) -> None:
    needs("wrk", "pgbench")
    sqlite = tmp_path / "bench.db"
    tiny_data_set(scratch_database, sqlite)

    raw = tmp_path / "run.json"
    ran = kit(
        "run",
        *("--postgres", scratch_database, "--sqlite", str(sqlite), "--redis", redis_url),
        *("--duration", "1", "--warmup", "0", "--rounds", "1", "--connections", "2"),
        # One read scenario with every comparator; posting is run by bench.compare
        # (tests/test_bench_sync.py).
        *("--workers", "1", "--json", str(raw), "--no-record", "--scenarios", "page1_50"),
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]

    measures = json.loads(raw.read_text())["measures"]
    found = {(m["engine"], m["target"], m["scenario"]) for m in measures}
    for engine in ("postgresql", "sqlite"):
        for target in ("service", "service_no_auth", "bare_floor", "http_floor"):
            assert (engine, target, "page1_50") in found, (engine, target)
    assert ("postgresql", "db_floor", "page1_50") in found
    for m in measures:
        assert m["rps"] > 0, m
        assert m["socket_errors"] == 0, m
        # Real pages, not errors, were measured, comparators included.
        assert m["non_2xx"] == 0, m
    assert "| postgresql | page1_50 |" in ran.stdout  # the Markdown report

    # The filtered summary's ways and the statement, on the same data set.
    summed = kit(
        "summary",
        *("--postgres", scratch_database, "--sqlite", str(sqlite), "--rounds", "1", "--no-record"),
        *("--warm-from", "1"),
        timeout=300,
    )
    assert summed.returncode == 0, summed.stderr[-3000:]
    for engine in ("postgresql", "sqlite"):
        row = next(line for line in summed.stdout.splitlines() if line.startswith(f"| {engine} |"))
        assert len(re.findall(r"\d[\d,]* \(\d+\.\d\dx\)", row)) == 10, row  # ms (ratio) each way


def test_the_redis_exchange_comparison_runs(redis_url: str) -> None:
    done = kit("redis_exchange", "--redis", redis_url, "--calls", "200", timeout=60)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split("  ")[1].strip() for line in lines] == [
        name for _ in range(3) for name in ("redis-py client", "shared connection")
    ]
    assert all(line.endswith("us CPU per exchange") for line in lines)


def test_the_isolation_benchmark_runs_and_reports(redis_url: str) -> None:
    # SQLite, one process, a second a phase, each kind of load A puts on:
    # receivers that hang, names that never answer at registration and at delivery.
    loads = ["hanging endpoints", "names at registration x12", "names at delivery"]
    loads += ["heavy form posts x3", "heavy form page x3", "heavy form saves x3"]
    done = kit(
        "isolation",
        *("--engines", "sqlite", "--processes", "1", "--seconds", "1", "--rounds", "1"),
        *("--redis", redis_url, "--no-record", "--loads", *loads),
        timeout=180,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    for load in ["quiet", *loads]:
        # B's deliveries all arrived, whatever A did.
        found = re.search(rf"^\| sqlite \| 1 \| {load} \| (\d+) of (\d+) \|", done.stdout, re.M)
        assert found is not None, (load, done.stdout)
        assert found[1] == found[2] != "0", (load, done.stdout)
    assert "| sqlite | 1 | names at registration x12 | hosted page post |" in done.stdout
    # A held its whole share of slots, and its names were asked and left unanswered.
    assert "16 of A's requests held at once" in done.stdout
    assert "16 of A's 16 names looked up and left unanswered" in done.stdout
    # A's costliest forms the bound takes, posted, read and saved.
    assert re.search(r"A's form “Heavy rules x\d+”: \d+ x 201 in", done.stdout)
    assert re.search(r"A's form “Heavy page x\d+”: \d+ x 200 in", done.stdout)
    assert "| sqlite | 1 | heavy form saves x3 | get form |" in done.stdout


def test_the_form_cost_benchmark_runs_and_reports() -> None:
    done = kit("form_cost", "--requests", "1", "--no-record", timeout=120)

    assert done.returncode == 0, done.stderr[-3000:]
    rows = re.findall(
        r"^\| (.+?) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| ([\d.,]+) \|", done.stdout, re.M
    )
    assert len(rows) == 8, done.stdout  # every kind of form was taken, posted to and read
    assert all(int(units.replace(",", "")) <= 100_000 for *_, units, _ in rows), rows


def test_the_form_language_benchmark_runs_and_reports(redis_url: str) -> None:
    done = kit(
        "logic",
        *("--engines", "sqlite", "--rounds", "1", "--seconds", "1", "--calls", "50"),
        *("--workers", "1", "--no-record"),
        timeout=120,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"validate_submission: \d+ µs plain, \d+ µs with the logic", done.stdout)
    posting = re.search(r"\| posting, sqlite, .* \| ([\d,]+) / ([\d,]+) posts/s", done.stdout)
    assert posting is not None, done.stdout
    assert "0" not in (posting[1], posting[2])  # both forms took posts (201s: checked by wrk)
    assert "| hosted page with logic, sqlite, GET" in done.stdout


def test_the_request_cpu_measure_runs_on_early_stops_and_keyed_reads() -> None:
    done = kit("request_cpu", "--requests", "5", timeout=120)

    assert done.returncode == 0, done.stderr[-3000:]
    answered = [(line.split()[0], line.split()[-6]) for line in done.stdout.splitlines()]
    assert answered == [
        ("/v1/forms", "401"),
        ("/v1/webhook-endpoints", "401"),
        ("/settings/keys", "303"),
        ("/settings/webhooks", "303"),
        ("/f/frm_missing", "404"),
        ("/nothing", "404"),
        ("/v1/forms", "200"),
        ("/v1/forms/{id}", "200"),
        ("/v1/forms/{id}/submissions", "200"),
    ]
    assert all(line.endswith("µs CPU a request") for line in done.stdout.splitlines())
