"""Running the benchmark kit from the tests."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
