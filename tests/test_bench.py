"""The benchmark kit runs end to end on a tiny data set, so it cannot rot.

The kit itself (a million submissions, 15 s per scenario) is run by hand; see
bench/README.md. This checks that its data set builder, runner, floors and
report still work against real servers, PostgreSQL, Redis, wrk and pgbench.
"""

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import POSTGRES_URL, service_unavailable

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def scratch_postgres(postgres_url: str) -> Iterator[str]:
    """A database of its own: the data set builder replaces the tables it loads."""
    import asyncio

    import asyncpg

    name = f"bench_smoke_{uuid.uuid4().hex[:8]}"
    admin = make_url(POSTGRES_URL).set(drivername="postgresql").render_as_string(False)

    async def run(sql: str) -> None:
        connection = await asyncpg.connect(admin)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    yield str(make_url(admin).set(database=name).render_as_string(False))
    asyncio.run(run(f'DROP DATABASE "{name}" WITH (FORCE)'))


def test_the_kit_builds_runs_and_reports(
    scratch_postgres: str, redis_url: str, tmp_path: Path
) -> None:
    for tool in ("wrk", "pgbench"):
        if shutil.which(tool) is None:
            service_unavailable(f"{tool} is not installed (.ci/run installs it)")
    sqlite = tmp_path / "bench.db"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.dataset",
            "--postgres",
            scratch_postgres,
            "--sqlite",
            str(sqlite),
            "--submissions",
            "600",
            "--forms",
            "3",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout.splitlines()[-1])["submissions"] == 600

    raw = tmp_path / "run.json"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.run",
            "--postgres",
            scratch_postgres,
            "--sqlite",
            str(sqlite),
            "--redis",
            redis_url,
            "--duration",
            "1",
            "--warmup",
            "0",
            "--rounds",
            "1",
            "--connections",
            "2",
            "--workers",
            "1",
            "--scenarios",
            "page1_50",
            "since_9pct",
            "post_submission",
            "not_found",
            "unauthorized",
            "--json",
            str(raw),
            "--no-record",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
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
        if m["scenario"] in ("page1_50", "since_9pct", "post_submission"):
            # Real pages and 201s, not errors, were measured, comparators included.
            assert m["non_2xx"] == 0, m
        if m["target"] == "service" and m["scenario"] in ("not_found", "unauthorized"):
            assert m["non_2xx"] > 0, m  # and the error scenarios really err
    assert "| postgresql | page1_50 |" in ran.stdout  # the Markdown report
