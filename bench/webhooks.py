"""Price webhook delivery on PostgreSQL, against floors measured in the same
run (the machine drifts; ratios hold within a run):

- throughput: one `formsapi worker` process drains N due deliveries to a
  receiver that answers at once; the floor is wrk POSTing the same body to
  the same receiver over as many connections as the worker may use on one
  endpoint;
- latency: 200 submissions a second are posted to `formsapi serve` for a
  while, and the receiver notes when each one's event arrives; p50 and p99
  from the API's 201 to the receiver;
- posting cost: wrk posts submissions to one form with no endpoint, then
  with an endpoint and a worker delivering, alternately, VACUUM ANALYZE
  before each round (this machine's PostgreSQL runs without autovacuum).

    python -m bench.webhooks                      # recorded in RESULTS.md
    python -m bench.webhooks --deliveries 5000 --rounds 1 --no-record

The receiver is a bare asyncio HTTP/1.1 server in this process (keep-alive,
204 to every request), so it costs the sender as little as a receiver can.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from statistics import median, quantiles

import aiohttp
import asyncpg  # type: ignore[import-untyped]
import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from bench.report import publish, section
from bench.run import KEEP_ALIVE, Server, free_port, in_process, service_env, wrk
from formsapi.api_key import service as api_key_service
from formsapi.db.migrations import migrate
from formsapi.member import service as member_service
from formsapi.models import Plan, Role
from formsapi.organization import service as organization_service
from formsapi.user import service as user_service

DATABASE = "bench_webhooks"
KEY = "b" * 40
FORMSAPI = str(Path(sys.executable).parent / "formsapi")
ANSWERS = {"name": "Ada", "colors": "red"}
BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Name", "required": True},
    {
        "type": "multiple_choice",
        "key": "colors",
        "title": "Colors",
        "options": [{"value": "red", "label": "Red"}, {"value": "blue", "label": "Blue"}],
    },
]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request off a kept-alive connection: its body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    return await reader.readexactly(length)


def submission_of(body: bytes) -> str | None:
    """The id of the submission an event carries, found without parsing it."""
    start = body.find(b'"id":"sub_')
    return None if start < 0 else body[start + 6 : body.index(b'"', start + 6)].decode()


class Receiver:
    """Answers 204 at once, keeps the connection, notes when each event came."""

    def __init__(self) -> None:
        # submission id -> seconds from its submittedAt (the server's clock,
        # this machine's) to its arrival here
        self.arrivals: dict[str, float] = {}
        self.count = 0
        self.first = self.last = 0.0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                body = await read_request(reader)
                now = time.monotonic()
                self.count += 1
                self.first = self.first or now
                self.last = now
                submission = submission_of(body)
                stamp = body.find(b'"submittedAt":"')
                if submission is not None and stamp >= 0:
                    submitted = datetime.fromisoformat(body[stamp + 15 : stamp + 39].decode())
                    self.arrivals[submission] = time.time() - submitted.timestamp()
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the sender closed, or the run is over
        finally:
            writer.close()


def _env(url: str, **extra: str) -> dict[str, str]:
    env = service_env(url, os.environ.get("FORMSAPI_BENCH_REDIS", "redis://127.0.0.1:6379/0"))
    env.update(
        {
            "FORMSAPI_SECRET_KEY": KEY,
            "FORMSAPI_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            "FORMSAPI_WEBHOOK_WORKER": "off",
        }
    )
    env.update({f"FORMSAPI_{k.upper()}": v for k, v in extra.items()})
    return env


async def _fresh_database(server: str) -> str:
    admin = await asyncpg.connect(f"{server}/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    return f"{server}/{DATABASE}"


def _setup(env: dict[str, str]) -> str:
    """An organization, its owner and a key that may do everything; the key.
    Made as `formsapi org create`, `user create`, `member add` and `key
    create` would make them, by the same services, in this process."""
    # An endpoint is sent answers: its key must be able to read them.
    scopes = [
        "forms:read",
        "forms:write",
        "submissions:read",
        "submissions:write",
        "webhooks:manage",
    ]

    async def work(session: AsyncSession) -> str:
        organization = await organization_service.create(session, "bench webhooks", Plan.pro)
        user = await user_service.create(session, "hooks@example.com", "correct horse battery")
        await member_service.add_directly(session, organization.id, user, Role.owner)
        created = await api_key_service.create(session, organization, user, "bench", scopes)
        return created.secret

    return in_process(env["FORMSAPI_DATABASE_URL"], work)


async def _vacuum(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


async def _pending(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'"
            )
        )
    finally:
        await connection.close()


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [FORMSAPI, "worker"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=open(os.environ.get("BENCH_WORKER_LOG", os.devnull), "ab"),
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


async def _api_objects(base: str, key: str, receiver: Receiver | None) -> str:
    """A published form (and, with a receiver, an endpoint for it): the form id."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers) as client:
        form = (await client.post("/v1/forms", json={"title": "Hooks", "blocks": BLOCKS})).json()
        await client.patch(f"/v1/forms/{form['id']}", json={"status": "published"})
        if receiver is not None:
            created = await client.post(
                "/v1/webhook-endpoints",
                json={"url": f"http://127.0.0.1:{receiver.port}/hook", "formIds": [form["id"]]},
            )
            created.raise_for_status()
        return str(form["id"])


async def throughput(url: str, env: dict[str, str], key: str, deliveries: int) -> dict[str, float]:
    """Deliveries a second one worker sends, and the wrk floor on the same receiver."""
    receiver = Receiver()
    await receiver.start()
    port = free_port()
    server = Server([FORMSAPI, "serve", "--port", str(port), "--no-access-log"], env, port)
    try:
        await _api_objects(f"http://127.0.0.1:{port}", key, receiver)
    finally:
        server.stop()
    # Due deliveries made in bulk, as a backlog after an outage would be.
    connection = await asyncpg.connect(url)
    try:
        endpoint, org = await connection.fetchrow(
            "SELECT id, organization_id FROM webhook_endpoints"
        )
        await connection.execute(
            """
            INSERT INTO events (id, organization_id, type, occurred_at, form_id, data)
            SELECT 'evt_bench' || n, $1, 'submission.created', now(), NULL,
                   '{"id":"sub_bench' || n || '","answers":{"name":"Ada","colors":"red"}}'
            FROM generate_series(1, $2) AS n
            """,
            org,
            deliveries,
        )
        await connection.execute(
            """
            INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_seq, event_id,
                event_type, status, attempts, next_attempt_at, created_at)
            SELECT 'whd_' || e.id, $1, $2, e.seq, e.id, e.type, 'pending', 0, now(), now()
            FROM events e WHERE e.id LIKE 'evt_bench%'
            """,
            org,
            endpoint,
        )
    finally:
        await connection.close()
    await _vacuum(url)
    worker = _worker(env)
    try:
        deadline = time.monotonic() + 600
        while receiver.count < deliveries and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        sent = receiver.count / (receiver.last - receiver.first)
    finally:
        _stop(worker)
    body = json.dumps({"type": "submission.created", "timestamp": "x", "data": ANSWERS})
    floor = await asyncio.to_thread(
        wrk, f"http://127.0.0.1:{receiver.port}/hook", 8, 10, {}, json.loads(body)
    )
    await receiver.stop()
    return {"worker": sent, "floor": floor["rps"]}


async def latency(
    env: dict[str, str], key: str, rate: int, seconds: float, forms: int
) -> dict[str, float]:
    """From each 201 to its event at the receiver, with `rate` posts a second
    spread over `forms` forms (posts to one form take turns on its row lock,
    so one form's own ceiling is not what this measures)."""
    receiver = Receiver()
    await receiver.start()
    port = free_port()
    server = Server([FORMSAPI, "serve", "--port", str(port), "--no-access-log"], env, port)
    worker = _worker(env)
    created: dict[str, float] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        targets = [await _api_objects(base, key, receiver) for _ in range(forms)]
        headers = {"Authorization": f"Bearer {key}"}
        connector = aiohttp.TCPConnector(limit=64, keepalive_timeout=KEEP_ALIVE)
        async with aiohttp.ClientSession(base, headers=headers, connector=connector) as client:

            async def post(at: float, form: str) -> None:
                await asyncio.sleep(max(0.0, at - time.monotonic()))
                try:
                    async with client.post(
                        f"/v1/forms/{form}/submissions", json={"answers": ANSWERS}
                    ) as response:
                        if response.status == 201:
                            created[(await response.json())["id"]] = time.monotonic()
                except aiohttp.ClientError:
                    pass  # not acknowledged: not counted

            start = time.monotonic() + 0.5
            await asyncio.gather(
                *(post(start + i / rate, targets[i % forms]) for i in range(int(rate * seconds)))
            )
        deadline = time.monotonic() + 30
        while set(created) - set(receiver.arrivals) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    finally:
        _stop(worker)
        server.stop()
        await receiver.stop()
    # From the moment the server stamped the submission (just before its
    # commit and 201) to the receiver: both clocks are this machine's.
    waits = sorted(receiver.arrivals[id_] * 1000 for id_ in created if id_ in receiver.arrivals)
    cuts = quantiles(waits, n=100)
    return {
        "posted": len(created),
        "arrived": len(waits),
        "achieved": len(created) / seconds,
        "p50": cuts[49],
        "p99": cuts[98],
        "max": waits[-1],
    }


async def posting(
    url: str, env: dict[str, str], key: str, rounds: int
) -> list[tuple[float, float]]:
    """Posts a second to one form without an endpoint and with one (and a
    worker delivering), alternately: (without, with) per round."""
    receiver = Receiver()
    await receiver.start()
    port = free_port()
    server = Server([FORMSAPI, "serve", "--port", str(port), "--no-access-log"], env, port)
    results = []
    try:
        base = f"http://127.0.0.1:{port}"
        bare = await _api_objects(base, key, None)
        hooked = await _api_objects(base, key, receiver)
        headers = {"Authorization": f"Bearer {key}"}
        for _ in range(rounds):
            pair = []
            for form, deliver in ((bare, False), (hooked, True)):
                await _vacuum(url)
                worker = _worker(env) if deliver else None
                try:
                    await asyncio.sleep(1)
                    found = await asyncio.to_thread(
                        wrk,
                        f"{base}/v1/forms/{form}/submissions",
                        16,
                        10,
                        headers,
                        {"answers": ANSWERS},
                    )
                finally:
                    if worker is not None:
                        _stop(worker)
                pair.append(found["rps"])
            results.append((pair[0], pair[1]))
    finally:
        server.stop()
        await receiver.stop()
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--deliveries", type=int, default=20_000)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--forms", type=int, default=4, help="forms the latency run posts to")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()

    url = await _fresh_database(args.server)
    await asyncio.to_thread(migrate, url)  # alembic runs its own event loop
    env = _env(url)
    key = _setup(env)
    sent = await throughput(url, env, key, args.deliveries)
    await _vacuum(url)
    waited = await latency(env, key, args.rate, args.seconds, args.forms)
    posts = await posting(url, env, key, args.rounds)
    ratios = [with_ / without for without, with_ in posts]
    rows = [
        f"| throughput, one worker, {args.deliveries:,} due | {sent['worker']:,.0f} deliveries/s "
        f"| wrk on the same receiver (8 connections): {sent['floor']:,.0f} req/s "
        f"| {100 * sent['worker'] / sent['floor']:.0f}% of the floor |",
        f"| latency, 201 to receiver, {waited['achieved']:.0f} posts/s to {args.forms} forms "
        f"for {args.seconds:g} s "
        f"| p50 {waited['p50']:.0f} ms, p99 {waited['p99']:.0f} ms, max {waited['max']:.0f} ms "
        f"| {waited['arrived']:,} of {waited['posted']:,} arrived | |",
        "| posting to one form, 16 connections, per round (without / with an endpoint) "
        "| " + ", ".join(f"{a:,.0f} / {b:,.0f}" for a, b in posts) + " "
        f"| median ratio {median(ratios) if ratios else float('nan'):.2f} | |",
    ]
    note = (
        "PostgreSQL, one `formsapi serve` and one `formsapi worker` process; the receiver is "
        "a bare asyncio server in the benchmark's process. VACUUM ANALYZE after loading and "
        "before every posting round (autovacuum is off on this machine)."
    )
    publish(
        section("webhook delivery (issue 15)", note, ["measure", "result", "against", ""], rows),
        keep=not args.no_record,
    )


if __name__ == "__main__":
    asyncio.run(main())
