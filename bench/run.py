"""Run the benchmark: wrk against real server processes, with floors measured
in the same run, results appended to bench/RESULTS.md.

    python -m bench.run                      # everything, as documented in bench/README.md
    python -m bench.run --engines postgresql --scenarios page1_50 --duration 5

Needs the data set (python -m bench.dataset), wrk, pgbench, PostgreSQL and Redis.
"""

import argparse
import asyncio
import json
import os
import pickle
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from bench.capture import capture_sync, pgbench_script
from bench.dataset import END, ORG_ID
from formsapi.api_key import service as api_key_service
from formsapi.db.engine import create_engine, dispose
from formsapi.db.session import create_sessionmaker
from formsapi.organization import service as organization_service
from formsapi.user import service as user_service

ROOT = Path(__file__).resolve().parent
# Under the server's keep-alive (uvicorn's 5 s): a client never reuses a
# connection the server may be closing as the request goes out.
KEEP_ALIVE = 2.0
BIG_FORM = "frm_bench00"
# About 9% of the big form: the last 66 of its 730 days.
SINCE = (END - timedelta(days=66)).strftime("%Y-%m-%dT%H:%M:%SZ")
# Not on an hour: the range's first minutes are counted from rows.
MONTH_AGO = (END - timedelta(days=30, minutes=17)).strftime("%Y-%m-%dT%H:%M:%SZ")

SCENARIOS: dict[str, tuple[str, bool]] = {  # name: (path, authenticated)
    "forms_list": ("/v1/forms", True),
    "form_schema": (f"/v1/forms/{BIG_FORM}", True),
    "page1_50": (f"/v1/forms/{BIG_FORM}/submissions?limit=50", True),
    "page1_100": (f"/v1/forms/{BIG_FORM}/submissions?limit=100", True),
    "page1000": (f"/v1/forms/{BIG_FORM}/submissions?limit=50&page=1000", True),
    "since_9pct": (f"/v1/forms/{BIG_FORM}/submissions?limit=50&since={SINCE}", True),
    "post_submission": (f"/v1/forms/{BIG_FORM}/submissions", True),
    # The same post with an Idempotency-Key of its own, as the Python client sends.
    "post_submission_keyed": (f"/v1/forms/{BIG_FORM}/submissions", True),
    # A sync client's page of the change feed, from the middle of the big form.
    "changes_1000": (f"/v1/forms/{BIG_FORM}/submissions/changes?after=250000&limit=1000", True),
    # Answer summaries of the big form: all of it, its last 30 days (kept
    # counts; bench.summary prices a summary filtered by an answer).
    "summary": (f"/v1/forms/{BIG_FORM}/summary", True),
    "summary_30d": (f"/v1/forms/{BIG_FORM}/summary?since={MONTH_AGO}", True),
    "not_found": ("/v1/forms/frm_missing", True),
    "unauthorized": ("/v1/forms", False),
}
SQL_SCENARIOS = [
    "forms_list",
    "form_schema",
    "page1_50",
    "page1_100",
    "page1000",
    "since_9pct",
    "summary",
    "summary_30d",
]
NO_AUTH_SCENARIOS = ["page1_50"]
# Scenarios that POST this body (a valid answer to the bench form).
POST_BODIES = {
    "post_submission": {
        "answers": {
            "full_name": "Ada Lovelace",
            "email": "ada@example.com",
            "plan": "team",
            "satisfaction": 4,
            "seats": 12,
            "features": "api,exports",
            "renewal": "2027-01-31",
            "comments": "Fast and predictable.",
        }
    },
}
POST_BODIES["post_submission_keyed"] = POST_BODIES["post_submission"]
# Scenarios whose every request carries a new Idempotency-Key.
KEYED = {"post_submission_keyed"}


@dataclass
class Measure:
    scenario: str
    target: str  # service, service_no_auth, bare_floor, http_floor, db_floor
    engine: str
    connections: int
    rps: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    non_2xx: int = 0
    socket_errors: int = 0
    peak_rss_mb: float | None = None


@dataclass
class Run:
    started: str
    command: str
    machine: dict[str, Any]
    versions: dict[str, str]
    settings: dict[str, Any]
    measures: list[Measure] = field(default_factory=list)


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A server process tree whose workers' resident memory is sampled."""

    def __init__(self, argv: list[str], env: dict[str, str], port: int) -> None:
        self.port = port
        self.log = tempfile.NamedTemporaryFile(prefix="bench-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.process = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.peak_rss_kb = 0
        self._sampling = False
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {Path(self.log.name).read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1):
                    return
            except urllib.error.HTTPError:
                return  # answering at all is ready enough for the floor apps
            except OSError:
                time.sleep(0.05)
        # Not left behind: its session would outlive the run, its workers respawning.
        self.stop()
        raise RuntimeError(
            f"server did not become ready: {Path(self.log.name).read_text()[-2000:]}"
        )

    def _tree(self) -> list[int]:
        pids, queue = [], [self.process.pid]
        while queue:
            pid = queue.pop()
            pids.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    queue += [int(child) for child in task.read_text().split()]
                except OSError:
                    continue  # a thread that ended meanwhile (aiosqlite's come and go)
        return pids

    def _sample(self) -> None:
        while self._sampling:
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                match = re.search(r"VmRSS:\s+(\d+) kB", status)
                if match:
                    self.peak_rss_kb = max(self.peak_rss_kb, int(match.group(1)))
            time.sleep(0.25)

    def start_sampling(self) -> None:
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def stop_sampling(self) -> None:
        self._sampling = False
        self._sampler.join()

    def stop(self) -> None:
        self._sampling = False
        os.killpg(self.process.pid, 15)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait(5)


def uvicorn_argv(factory: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        factory,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--log-level",
        "warning",
        "--no-proxy-headers",
        "--no-server-header",
    ]


def _body_size(port: int, path: str, headers: dict[str, str], body: Any = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        headers={**headers, "Content-Type": "application/json"} if data else headers,
    )
    try:
        with urllib.request.urlopen(request) as response:
            return len(response.read())
    except urllib.error.HTTPError as error:
        return len(error.read())


def cli(argv: list[str], env: dict[str, str], binary: str | None = None) -> str:
    done = subprocess.run(
        [binary or str(Path(sys.executable).parent / "formsapi"), *argv],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def service_env(url: str, redis: str) -> dict[str, str]:
    """A server's settings for a run: real keys and a real limiter in Redis,
    the plan limits raised so the run is not refused. No forms warmed for
    summaries: reading the data set's into memory at start (bench.summary
    times it) would take the first seconds' CPU from the run measured."""
    return {
        "FORMSAPI_DATABASE_URL": url,
        "FORMSAPI_REDIS_URL": redis,
        "FORMSAPI_REDIS_PREFIX": f"bench-{uuid.uuid4()}",
        "FORMSAPI_RATE_LIMIT_STANDARD": "1000000000",
        "FORMSAPI_RATE_LIMIT_PRO": "1000000000",
        "FORMSAPI_SUMMARY_WARM_FROM": "0",
    }


T = TypeVar("T")


def in_process(url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """`work` in one committed session on `url`, run by this build's services
    in this process (on a thread of its own, so a running event loop is no
    matter): what a CLI command does, without the seconds a new Python
    process takes to import the service."""

    async def run() -> T:
        engine = create_engine(url)
        try:
            async with create_sessionmaker(engine)() as session:
                done = await work(session)
                await session.commit()
                return done
        finally:
            await dispose(engine)

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def bench_key(env: dict[str, str], name: str, scopes: list[str], binary: str | None = None) -> str:
    """A new key of the data set's organization: made by another build's CLI
    when `binary` names it (its schema may differ), by this build's services
    otherwise."""
    key_name = f"bench {name} {datetime.now(UTC):%H%M%S}"
    if binary is not None:
        argv = ["key", "create", "--org", ORG_ID, "--email", "bench@example.com"]
        argv += ["--name", key_name]
        for scope in scopes:
            argv += ["--scope", scope]
        return cli(argv, env, binary)

    async def create(session: AsyncSession) -> str:
        organization = await organization_service.get(session, ORG_ID)
        user = await user_service.get_by_email(session, "bench@example.com")
        created = await api_key_service.create(session, organization, user, key_name, scopes)
        return created.secret

    return in_process(env["FORMSAPI_DATABASE_URL"], create)


# ---------------------------------------------------------------- load tools

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def wrk(
    url: str,
    connections: int,
    seconds: float,
    headers: dict[str, str],
    body: Any = None,
    keyed: bool = False,
) -> dict[str, Any]:
    threads = min(2, connections)
    argv = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "--timeout",
        "5s",
    ]
    for name, value in headers.items():
        argv += ["-H", f"{name}: {value}"]
    if body is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(
                f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
            )
            if keyed:
                # Each thread numbers its requests; the run's nonce keeps
                # keys of earlier runs on the same database from replaying.
                script.write(
                    "local threads = 0\n"
                    "function setup(thread) threads = threads + 1; thread:set('id', threads) end\n"
                    "local sent = 0\n"
                    "function request()\n"
                    "  sent = sent + 1\n"
                    f"  wrk.headers['Idempotency-Key'] = '{uuid.uuid4().hex}-' .. id .. '-' .. sent\n"
                    "  return wrk.format()\n"
                    "end\n"
                )
        argv += ["-s", script.name]
    out = subprocess.run([*argv, url], capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for label, key in (("50%", "p50_ms"), ("99%", "p99_ms")):
        match = re.search(rf"{re.escape(label)}\s+([\d.]+(?:us|ms|s))", out)
        result[key] = _ms(match.group(1)) if match else None
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    result["socket_errors"] = sum(int(n) for n in errors.groups()) if errors else 0
    return result


def pgbench(database: str, script: str, connections: int, seconds: float) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as handle:
        handle.write(script)
    argv = [
        "pgbench",
        "-n",
        "-M",
        "prepared",
        "-h",
        "127.0.0.1",
        "-U",
        "postgres",
        "-c",
        str(connections),
        "-j",
        str(min(2, connections)),
        "-T",
        str(int(seconds)),
        "-f",
        handle.name,
        database,
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"tps = ([\d.]+)", out).group(1))  # type: ignore[union-attr]


# ---------------------------------------------------------------- the run


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run = Run(
            started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            command="python -m bench.run " + " ".join(sys.argv[1:]),
            machine={
                "cores": os.cpu_count(),
                "memory_gb": round(
                    os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
                ),
                "cpu": _cpu_model(),
                "kernel": platform.release(),
            },
            versions=_versions(),
            settings={
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "workers": args.workers,
                "connections": args.connections,
                "rounds": args.rounds,
            },
        )

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def measure(
        self,
        server: Server,
        scenario: str,
        target: str,
        engine: str,
        path: str,
        headers: dict[str, str],
        connections: int,
    ) -> Measure:
        url = f"http://127.0.0.1:{server.port}{path}"
        if self.args.warmup:
            wrk(
                url,
                connections,
                self.args.warmup,
                headers,
                POST_BODIES.get(scenario),
                scenario in KEYED,
            )
        server.peak_rss_kb = 0
        server.start_sampling()
        result = wrk(
            url,
            connections,
            self.args.duration,
            headers,
            POST_BODIES.get(scenario),
            scenario in KEYED,
        )
        server.stop_sampling()
        return Measure(
            scenario,
            target,
            engine,
            connections,
            peak_rss_mb=round(server.peak_rss_kb / 1024, 1),
            **result,
        )

    def record(self, rounds: list[Measure]) -> None:
        """Keep the round with the median throughput: the machine is noisy, and
        every target gets the same rounds, interleaved with the others."""
        ordered = sorted(rounds, key=lambda m: m.rps)
        median = ordered[len(ordered) // 2]
        median.peak_rss_mb = max((m.peak_rss_mb or 0) for m in rounds)
        self.run.measures.append(median)
        rates = ", ".join(f"{m.rps:.0f}" for m in rounds)
        self.log(
            f"{median.engine:10} {median.target:16} {median.scenario:13} "
            f"c={median.connections:<3} {median.rps:9.1f}/s (rounds: {rates}) "
            f"p50 {median.p50_ms} p99 {median.p99_ms} non2xx {median.non_2xx} "
            f"rss {median.peak_rss_mb} MB"
        )

    def engine(self, engine: str, url: str) -> None:
        env = service_env(url, self.args.redis) | {"BENCH_ORG_ID": ORG_ID}
        # submissions:write for post_submission
        secret = bench_key(env, "run", ["forms:read", "submissions:read", "submissions:write"])
        auth = {"Authorization": f"Bearer {secret}"}
        scenarios = [s for s in self.args.scenarios if s in SCENARIOS]
        with_sql = [s for s in scenarios if s in SQL_SCENARIOS]
        floors = not self.args.no_floors

        # Every target runs side by side, idle but for the one under load, so
        # their rounds can interleave.
        servers: dict[str, Server] = {}
        try:
            port = free_port()
            servers["service"] = Server(
                [
                    str(Path(sys.executable).parent / "formsapi"),
                    "serve",
                    "--port",
                    str(port),
                    "--workers",
                    str(self.args.workers),
                    "--no-access-log",
                ],
                env,
                port,
            )
            if any(s in NO_AUTH_SCENARIOS for s in scenarios):
                port = free_port()
                servers["service_no_auth"] = Server(
                    uvicorn_argv("bench.apps:service_without_auth", port, self.args.workers),
                    env,
                    port,
                )
            plans: dict[str, list[dict[str, Any]]] = {}
            if floors and with_sql:
                plans = capture_sync(
                    url, self.args.redis, secret, {n: SCENARIOS[n][0] for n in with_sql}
                )
                plans_file = Path(tempfile.mkstemp(suffix=".pickle")[1])
                plans_file.write_bytes(pickle.dumps(plans))
                port = free_port()
                servers["bare_floor"] = Server(
                    uvicorn_argv("bench.apps:bare_floor", port, self.args.workers),
                    {**env, "BENCH_SQL_FILE": str(plans_file)},
                    port,
                )
            if floors:
                port = free_port()
                servers["http_floor"] = Server(
                    uvicorn_argv("bench.apps:http_floor", port, self.args.workers), env, port
                )

            for name in scenarios:
                path, authenticated = SCENARIOS[name]
                headers = auth if authenticated else {}
                size = _body_size(servers["service"].port, path, headers, POST_BODIES.get(name))
                targets: list[tuple[str, str, dict[str, str]]] = [("service", path, headers)]
                if name in NO_AUTH_SCENARIOS and "service_no_auth" in servers:
                    targets.append(("service_no_auth", path, {}))
                if name in plans:
                    targets.append(("bare_floor", f"/{name}", {}))
                if "http_floor" in servers:
                    targets.append(("http_floor", f"/size/{size}", {}))
                for connections in self.args.connections:
                    rounds: dict[str, list[Measure]] = {t: [] for t, _, _ in targets}
                    db_rounds: list[float] = []
                    for _ in range(self.args.rounds):
                        for target, target_path, target_headers in targets:
                            rounds[target].append(
                                self.measure(
                                    servers[target],
                                    name,
                                    target,
                                    engine,
                                    target_path,
                                    target_headers,
                                    connections,
                                )
                            )
                        if engine == "postgresql" and name in plans:
                            db_rounds.append(self.db_floor(url, name, plans[name], connections))
                    for measured in rounds.values():
                        self.record(measured)
                    if db_rounds:
                        tps = sorted(db_rounds)[len(db_rounds) // 2]
                        self.run.measures.append(
                            Measure(name, "db_floor", engine, connections, tps)
                        )
                        self.log(
                            f"{engine:10} {'db_floor':16} {name:13} c={connections:<3} "
                            f"{tps:9.1f}/s (rounds: {', '.join(f'{r:.0f}' for r in db_rounds)})"
                        )
        finally:
            for server in servers.values():
                server.stop()

    def db_floor(self, url: str, name: str, plan: list[dict[str, Any]], connections: int) -> float:
        script = pgbench_script(plan)
        (ROOT / "sql").mkdir(exist_ok=True)
        (ROOT / "sql" / f"{name}.sql").write_text(script)
        return pgbench(url.rsplit("/", 1)[1], script, connections, self.args.duration)

    def execute(self) -> Run:
        for engine in self.args.engines:
            url = self.args.postgres if engine == "postgresql" else f"sqlite:///{self.args.sqlite}"
            self.engine(engine, url)
        return self.run


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in (
        "formsapi",
        "fastapi",
        "uvicorn",
        "sqlalchemy",
        "asyncpg",
        "aiosqlite",
        "orjson",
        "limits",
    ):
        found[package] = version(package)
    for tool, argv in (
        ("postgresql", ["psql", "--version"]),
        ("redis", ["redis-server", "-v"]),
        ("wrk", ["wrk", "-v"]),
    ):
        if shutil.which(argv[0]):
            out = subprocess.run(argv, capture_output=True, text=True).stdout
            match = re.search(r"\d+\.\d+(?:\.\d+)?", out)
            found[tool] = match.group(0) if match else "?"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark formsapi against its floors.")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--sqlite", default=str(ROOT / "data" / "bench.db"))
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--engines", nargs="+", default=["postgresql", "sqlite"], choices=["postgresql", "sqlite"]
    )
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--connections", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--duration", type=float, default=15)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved rounds per target; the median is reported",
    )
    parser.add_argument("--no-floors", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the raw run here")
    parser.add_argument(
        "--no-record", action="store_true", help="do not add this run to bench/RESULTS.md"
    )
    args = parser.parse_args()
    run = Bench(args).execute()
    if args.json:
        args.json.write_text(json.dumps(asdict(run), indent=1))
    from bench.report import record, render

    report = render(run)
    print(report)
    if not args.no_record:
        record(report, ROOT / "RESULTS.md")


if __name__ == "__main__":
    main()
