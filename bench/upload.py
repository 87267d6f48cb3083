"""Uploads to a file question: MB/s at 8 concurrent uploads, and the peak
memory of the server as the file grows, on each storage:

- sqlite, postgresql: the database storage (512 KiB chunks, a transaction each);
- s3: moto's S3 server in a process of its own on loopback (the file rows
  in SQLite), multipart in 8 MiB parts.

    python -m bench.upload --postgres postgresql://postgres@127.0.0.1:5432/bench_upload
    python -m bench.upload --cases sqlite s3 --each-mb 1 --big-mb 9 --no-record

For each storage, three measures, each on a fresh `formsapi serve --workers 1`
so that its peak resident memory (VmHWM, the largest of the process tree's,
from /proc) is that measure's alone: one upload of --small-mb (1 MiB), one of
--big-mb (1 GiB), and --concurrency (8) uploads of --each-mb at once. Bodies
are streamed from a generator (chunked, no Content-Length) over a 1 MiB block
of random bytes, so the benchmark never holds a file either; each upload must
answer 201 with its size and SHA-256. FORMSAPI_UPLOAD_MAX_BYTES is raised to
fit the big file. The PostgreSQL database's public schema is replaced at each
start (give it one of its own), and VACUUM ANALYZE runs before every measure
(autovacuum is off on this machine). MB here is 2**20 bytes.
"""

import argparse
import asyncio
import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.report import publish, section
from bench.run import Server, free_port, service_env
from bench.webhooks import FORMSAPI, _setup
from formsapi.db.migrations import migrate

MB = 1024 * 1024
PIECE = 256 * 1024  # what the client hands the socket at a time
_BLOCK = random.Random(28).randbytes(MB)  # filler, not a secret
_PIECES = [_BLOCK[start : start + PIECE] for start in range(0, MB, PIECE)]
FORM = {
    "title": "Bench uploads",
    "blocks": [{"type": "file", "key": "upload", "title": "A file", "maxSize": 5 * 1024 * MB}],
}
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}


def pieces(size: int) -> Iterator[bytes]:
    """`size` bytes of the block repeated, a piece at a time."""
    left = size
    while left > 0:
        for piece in _PIECES:
            if left <= 0:
                return
            yield piece[:left] if left < len(piece) else piece
            left -= len(piece)


_DIGESTS: dict[int, str] = {}


def digest(size: int) -> str:
    """The SHA-256 a body of `size` bytes must come back with (worked out
    before the clock starts)."""
    if size not in _DIGESTS:
        hashed = hashlib.sha256()
        for piece in pieces(size):
            hashed.update(piece)
        _DIGESTS[size] = hashed.hexdigest()
    return _DIGESTS[size]


async def body(size: int) -> AsyncIterator[bytes]:
    for piece in pieces(size):
        yield piece


def peak_rss_mb(server: Server) -> float:
    """The largest VmHWM of the server's processes."""
    peak = 0
    for pid in server._tree():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        if match:
            peak = max(peak, int(match.group(1)))
    return peak / 1024


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Case:
    """One storage: the server's settings, and the database to vacuum."""

    name: str
    env: dict[str, str]
    postgres: str | None = None

    def start(self) -> Server:
        port = free_port()
        argv = [FORMSAPI, "serve", "--port", str(port), "--workers", "1", "--no-access-log"]
        return Server(argv, self.env, port)

    async def vacuum(self) -> None:
        if self.postgres is not None:
            connection = await asyncpg.connect(self.postgres)
            try:
                await connection.execute("VACUUM ANALYZE")
            finally:
                await connection.close()


async def uploads(base: str, key: str, form: str, size: int, count: int) -> float:
    """`count` uploads of `size` bytes at once, each checked; seconds taken."""
    expected = digest(size)
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx.Timeout(600, connect=10)
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=timeout, limits=limits
    ) as client:

        async def one() -> None:
            answer = await client.post(
                f"/v1/forms/{form}/files",
                params={"question": "upload", "name": "bench.bin"},
                content=body(size),
            )
            assert answer.status_code == 201, answer.text
            file = answer.json()
            assert (file["size"], file["sha256"]) == (size, expected), file

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(count)))
        return time.perf_counter() - started


def published_form(base: str, key: str) -> str:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
        created = client.post("/v1/forms", json=FORM)
        created.raise_for_status()
        form: str = created.json()["id"]
        client.patch(f"/v1/forms/{form}", json={"status": "published"}).raise_for_status()
    return form


async def measure(case: Case, args: argparse.Namespace) -> str:
    """The case's row: three fresh servers, one per measure."""
    await asyncio.to_thread(migrate, case.env["FORMSAPI_DATABASE_URL"])
    key = await asyncio.to_thread(_setup, case.env)
    form = ""
    found: dict[str, tuple[float, float, float]] = {}  # measure: (seconds, MB, peak RSS)
    plan = [
        ("small", int(args.small_mb * MB), 1),
        ("big", int(args.big_mb * MB), 1),
        ("concurrent", int(args.each_mb * MB), args.concurrency),
    ]
    idle = []
    for name, size, count in plan:
        digest(size)
        await case.vacuum()
        server = await asyncio.to_thread(case.start)
        try:
            base = f"http://127.0.0.1:{server.port}"
            form = form or await asyncio.to_thread(published_form, base, key)
            idle.append(peak_rss_mb(server))
            seconds = await uploads(base, key, form, size, count)
            found[name] = (seconds, size * count / MB, peak_rss_mb(server))
        finally:
            server.stop()
        log(
            f"{case.name}: {name}, {count} x {size / MB:g} MB in {seconds:.2f} s "
            f"({size * count / MB / seconds:,.1f} MB/s), peak RSS {found[name][2]:.0f} MB"
        )

    def rate(name: str) -> str:
        seconds, megabytes, _ = found[name]
        return f"{megabytes / seconds:,.1f}"

    return (
        f"| {case.name} | {rate('concurrent')} | {found['concurrent'][2]:.0f} "
        f"| {found['small'][2]:.0f} | {found['big'][2]:.0f} ({rate('big')} MB/s) "
        f"| {max(idle):.0f} |"
    )


async def fresh_postgres(url: str) -> str:
    """The database at `url`, created if missing, its public schema emptied."""
    server, name = url.rsplit("/", 1)
    admin = await asyncpg.connect(f"{server}/postgres")
    try:
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await connection.close()
    return url


class Moto:
    """moto's S3 server, a process of its own on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto's server exited with {self.process.returncode}")
            try:
                httpx.get(self.endpoint, timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto's server is not answering") from None
                time.sleep(0.2)

    def bucket(self) -> str:
        import boto3

        name = f"bench-{uuid.uuid4().hex[:12]}"
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        client.create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["sqlite", "postgresql", "s3"],
                        choices=["sqlite", "postgresql", "s3"])  # fmt: skip
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/bench_upload",
        help="a database of the benchmark's own: its public schema is replaced",
    )
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--each-mb", type=float, default=64, help="per concurrent upload")
    parser.add_argument("--small-mb", type=float, default=1)
    parser.add_argument("--big-mb", type=float, default=1024)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()

    largest = int(max(args.big_mb, args.each_mb, args.small_mb) * MB)
    rows = []
    moto: Moto | None = None
    with tempfile.TemporaryDirectory() as directory:
        try:
            for name in args.cases:
                sqlite = f"sqlite:///{Path(directory) / f'{name}.db'}"
                url = await fresh_postgres(args.postgres) if name == "postgresql" else sqlite
                env = service_env(url, args.redis)
                env["FORMSAPI_UPLOAD_MAX_BYTES"] = str(largest + MB)
                env["FORMSAPI_UPLOAD_STORAGE"] = "s3" if name == "s3" else "database"
                if name == "s3":
                    moto = moto or Moto()
                    env.update(CREDENTIALS)
                    env["FORMSAPI_S3_ENDPOINT_URL"] = moto.endpoint
                    env["FORMSAPI_S3_BUCKET"] = moto.bucket()
                case = Case(name, env, url if name == "postgresql" else None)
                rows.append(await measure(case, args))
        finally:
            if moto is not None:
                moto.stop()
    header = [
        "storage",
        f"{args.concurrency} concurrent x {args.each_mb:g} MB: MB/s",
        "peak RSS MB",
        f"one {args.small_mb:g} MB upload: peak RSS MB",
        f"one {args.big_mb:g} MB upload: peak RSS MB (MB/s)",
        "started, idle: RSS MB",
    ]
    note = (
        "Each cell is a fresh `formsapi serve --workers 1` (Redis for the rate limit), "
        "its peak resident memory (VmHWM) read after the uploads; bodies streamed chunked "
        "from a generator, each upload checked (201, size, SHA-256). PostgreSQL: VACUUM "
        "ANALYZE before every measure (autovacuum is off on this machine). s3: moto's "
        "server on loopback (its own process, not counted), file rows in SQLite. "
        f"MB = 2^20 bytes; {os.cpu_count()} cores shared by client, server and database."
    )
    publish(
        section("uploads (issue 28): throughput and memory", note, header, rows),
        keep=not args.no_record,
    )


if __name__ == "__main__":
    asyncio.run(main())
