"""The kit's sync and comparison runners run end to end on a tiny data set, so
they cannot rot (a file of its own: the suite runs files side by side)."""

import re
from pathlib import Path

from tests.support.bench_kit import ROOT, kit, needs, tiny_data_set


def test_the_sync_and_compare_runners_run_and_report(
    scratch_database: str, redis_url: str, tmp_path: Path
) -> None:
    needs("wrk", "psql")
    sqlite = tmp_path / "bench.db"
    tiny_data_set(scratch_database, sqlite)

    synced = kit(
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
    compared = kit(
        "compare",
        *("--other", str(ROOT), "--other-postgres", scratch_database, "--redis", redis_url),
        *("--postgres", scratch_database, "--duration", "1", "--warmup", "0", "--rounds", "1"),
        *("--connections", "2", "--workers", "1", "--no-record"),
        *("--scenarios", "post_submission", "post_submission_keyed"),
        timeout=300,
    )
    assert compared.returncode == 0, compared.stderr[-3000:]
    assert "| postgresql | post_submission |" in compared.stdout
    assert "| postgresql | post_submission_keyed |" in compared.stdout
