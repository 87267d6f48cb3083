"""The upload benchmark runs end to end on tiny files, so it cannot rot (a
file of its own: the suite runs files side by side)."""

import re

from tests.support.bench_kit import kit


def test_the_upload_benchmark_runs_and_reports(scratch_database: str, redis_url: str) -> None:
    # One storage: the kit's code is the same for each, and each costs three
    # server starts (the storages themselves are tested in tests/file/).
    done = kit(
        "upload",
        *("--cases", "sqlite", "--postgres", scratch_database, "--redis", redis_url),
        *("--concurrency", "2", "--each-mb", "0.5", "--small-mb", "0.1", "--big-mb", "1"),
        "--no-record",
        timeout=600,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    for storage in ("sqlite",):
        # Every upload came back 201 with its size and hash (the kit checks),
        # and each cell has a figure.
        row = re.search(rf"^\| {storage} \|(.*)\|$", done.stdout, re.MULTILINE)
        assert row is not None, done.stdout
        cells = [cell.strip() for cell in row[1].split("|")]
        assert len(cells) == 5, cells
        assert all(re.match(r"[\d,.]+", cell) for cell in cells), cells
