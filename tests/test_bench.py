"""The benchmark kit runs end to end on a tiny data set, so it cannot rot.

The kit itself (a million submissions, 15 s per scenario) is run by hand; see
bench/README.md. This checks that its data set builder, runner, floors and
report still work against real servers, PostgreSQL, Redis, wrk and pgbench.
"""

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import scratch_postgres, service_unavailable

ROOT = Path(__file__).resolve().parent.parent


def _kit(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m bench.<module> <args>` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def scratch_database(postgres_url: str) -> Iterator[str]:
    """A database of its own: the data set builder replaces the tables it loads."""
    with scratch_postgres(postgres_url) as url:
        yield url


def test_the_kit_builds_runs_and_reports(
    scratch_database: str, redis_url: str, tmp_path: Path
) -> None:
    for tool in ("wrk", "pgbench"):
        if shutil.which(tool) is None:
            service_unavailable(f"{tool} is not installed (.ci/run installs it)")
    sqlite = tmp_path / "bench.db"
    built = _kit(
        "dataset",
        *("--postgres", scratch_database, "--sqlite", str(sqlite)),
        *("--submissions", "600", "--forms", "3"),
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout.splitlines()[-1])["submissions"] == 600

    raw = tmp_path / "run.json"
    ran = _kit(
        "run",
        *("--postgres", scratch_database, "--sqlite", str(sqlite), "--redis", redis_url),
        *("--duration", "1", "--warmup", "0", "--rounds", "1", "--connections", "2"),
        *("--workers", "1", "--json", str(raw), "--no-record", "--scenarios", "page1_50"),
        "post_submission",
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
        # Real pages and 201s, not errors, were measured, comparators included.
        assert m["non_2xx"] == 0, m
    assert "| postgresql | page1_50 |" in ran.stdout  # the Markdown report

    synced = _kit(
        "sync",
        *("--postgres", scratch_database, "--sqlite", str(sqlite), "--redis", redis_url),
        *("--rounds", "1", "--no-record"),
        timeout=300,
    )
    assert synced.returncode == 0, synced.stderr[-3000:]
    # The kit checks that the feed, its floor and the export each read every
    # row of the big form (posts above added some), then reports both engines.
    for engine in ("postgresql", "sqlite"):
        assert re.search(rf"^\| {engine} \| [\d,]+ \|", synced.stdout, re.MULTILINE), synced.stdout

    # This checkout against itself stands for an earlier commit's checkout.
    compared = _kit(
        "compare",
        *("--other", str(ROOT), "--other-postgres", scratch_database, "--redis", redis_url),
        *("--postgres", scratch_database, "--duration", "1", "--warmup", "0", "--rounds", "1"),
        *("--connections", "2", "--workers", "1", "--no-record"),
        timeout=300,
    )
    assert compared.returncode == 0, compared.stderr[-3000:]
    assert "| postgresql | post_submission |" in compared.stdout


def test_the_redis_exchange_comparison_runs(redis_url: str) -> None:
    done = _kit("redis_exchange", "--redis", redis_url, "--calls", "200", timeout=60)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split("  ")[1].strip() for line in lines] == [
        name for _ in range(3) for name in ("redis-py client", "shared connection")
    ]
    assert all(line.endswith("us CPU per exchange") for line in lines)
