"""Running the benchmark kit from the tests."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import service_unavailable

ROOT = Path(__file__).resolve().parents[2]


def kit(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m bench.<module> <args>` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def needs(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            service_unavailable(f"{tool} is not installed (.ci/run installs it)")


def tiny_data_set(postgres_url: str, sqlite: Path) -> None:
    """The kit's data set at 600 submissions in 3 forms, on both engines."""
    built = kit(
        "dataset",
        *("--postgres", postgres_url, "--sqlite", str(sqlite)),
        *("--submissions", "600", "--forms", "3"),
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout.splitlines()[-1])["submissions"] == 600
