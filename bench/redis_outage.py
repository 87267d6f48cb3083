"""What a frozen Redis costs each request: `formsapi serve` (one worker, SQLite)
on a Redis of its own, which is stopped (SIGSTOP: connections open, nothing
answered) and then resumed, while one client sends `GET /v1/forms` with a key
back to back. Prints each phase's request count and latencies.

    python -m bench.redis_outage [--seconds S]
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.run import Server, free_port


def _redis(port: int) -> subprocess.Popen[bytes]:
    redis = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--port", str(port), "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return redis


def _phase(client: httpx.Client, auth: dict[str, str], seconds: float) -> list[float]:
    latencies, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        response = client.get("/v1/forms", headers=auth)
        latencies.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return latencies


def _report(name: str, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    slow = sum(1 for ms in ordered if ms > 100)
    print(
        f"{name:16} {len(ordered):6} requests  p50 {statistics.median(ordered):7.1f} ms"
        f"  p99 {p99:7.1f} ms  max {ordered[-1]:7.1f} ms  over 100 ms: {slow}"
    )


def main(seconds: float) -> None:
    directory = Path(tempfile.mkdtemp(prefix="bench-outage-"))
    redis_port, port = free_port(), free_port()
    redis = _redis(redis_port)
    env = {
        "FORMSAPI_DATABASE_URL": f"sqlite:///{directory / 'outage.db'}",
        "FORMSAPI_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "FORMSAPI_RATE_LIMIT_STANDARD": "1000000",
    }
    formsapi = Path(sys.executable).parent / "formsapi"
    subprocess.run(
        [formsapi, "migrate"], env={**os.environ, **env}, check=True, capture_output=True
    )
    hint = subprocess.run(
        [formsapi, "demo", "--forms", "2", "--submissions", "20"],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    secret = hint.split("Bearer ")[1].split("'")[0]
    server = Server(
        [str(formsapi), "serve", "--port", str(port), "--workers", "1", "--no-access-log"],
        env,
        port,
    )
    auth = {"Authorization": f"Bearer {secret}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            _phase(client, auth, 1)  # warm up
            _report("Redis up", _phase(client, auth, seconds))
            redis.send_signal(signal.SIGSTOP)
            _report("Redis frozen", _phase(client, auth, seconds))
            redis.send_signal(signal.SIGCONT)
            _report("Redis back", _phase(client, auth, seconds))
    finally:
        redis.send_signal(signal.SIGCONT)
        redis.terminate()
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    main(parser.parse_args().seconds)
