"""Organizations cannot stall each other (issue 25): a quiet organization B's
delivery and request latency while nothing else runs, and while another
organization A does its worst, on both engines, with one and with two
delivering processes.

    python -m bench.isolation                     # recorded in RESULTS.md
    python -m bench.isolation --engines sqlite --processes 1 --seconds 5 --rounds 1 --no-record

B has one endpoint, on a receiver in this process that answers 204 at once,
and sends a steady mix (every 50 ms, in turn: a submission POSTed through
the API, a page of its submissions, its form, a POST to its hosted page).
For each submission the receiver notes the time from the POST's 201 to the
delivery's arrival. What A does, one at a time (the phases of a round):

- quiet: nothing;
- hanging endpoints: 50 endpoints (the per-organization limit) on a
  receiver that reads each request and never answers, so every attempt
  lasts the sender's whole timeout; 20 submissions at the start (1,000 due
  deliveries) and one more a second;
- names at registration, 3 and 12 clients: POSTs of endpoints whose host
  names a DNS server here never answers, back to back, so that many
  registrations are always waiting out the lookup timeout (then 422);
- names at delivery: 16 endpoints whose names resolved when registered and
  never answer after, 20 submissions at the start and one a second;
- endpoint churn: 10 endpoints on a receiver that answers at once, five
  submissions a second, and the oldest endpoint deleted and replaced, back
  to back, while its deliveries are being fanned out and recorded.

Every host name the service looks up goes to that DNS server (a UDP socket
here: FORMSAPI_WEBHOOK_DNS_SERVERS). B's endpoint has a name too, which it
answers at once: B's lookups go to the server A's hang on, from the same
processes.

A phase lasts 20 s by default, longer than an attempt's 15 s timeout, so the
hanging receiver's wave of timeouts, retries scheduled and new claims lands
inside it. The machine is noisy: phases are interleaved within a round, the
rounds' medians reported; PostgreSQL is vacuumed before every phase
(autovacuum is off here).
"""

import argparse
import asyncio
import itertools
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import IO, Any

import aiohttp
import asyncpg  # type: ignore[import-untyped]

from bench.report import publish, section
from bench.run import KEEP_ALIVE, Server, free_port, service_env
from bench.webhooks import ANSWERS, BLOCKS, FORMSAPI, read_request, submission_of
from formsapi.api_key import service as api_key_service
from formsapi.api_key.scopes import Scope
from formsapi.config import Settings
from formsapi.db.engine import create_engine, dispose
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from formsapi.form import service as form_service
from formsapi.kit.ids import new_id
from formsapi.language.blocks import BlockList
from formsapi.language.definition import Definition, Layout
from formsapi.member import service as member_service
from formsapi.models import Plan, Role
from formsapi.organization import service as organization_service
from formsapi.user import service as user_service
from formsapi.webhook.service import MAX_ENDPOINTS

DATABASE = "bench_isolation"
KEY = "i" * 40
ROOT = Path(__file__).resolve().parent.parent
SCOPES = [str(scope) for scope in Scope]
# B's mix, one request every INTERVAL seconds in this order: each kind every 200 ms.
KINDS = ("post submission", "list submissions", "get form", "hosted page post")
INTERVAL = 0.05
# The budgets the promise gives another organization's worst: added delay.
DELIVERY_BUDGET_MS = 2000.0
REQUEST_BUDGET_MS = 1000.0
CHURNED = 10  # endpoints A keeps while it deletes and replaces them
LATE_ENDPOINTS = 16  # the organization's whole share, even once each endpoint is cut to one slot
BACKLOG = 20  # submissions A posts when a delivery phase starts
STRAGGLERS = 30.0  # seconds B's last deliveries are waited for
LOADS = (
    "quiet",
    "hanging endpoints",
    "names at registration x3",
    "names at registration x12",
    "names at delivery",
    "endpoint churn",
    "heavy form posts x3",
    "heavy form page x3",
    "heavy form saves x3",
)
DEFAULTS = Settings.model_fields  # the recorded run changes none of the webhook settings


# ---------------------------------------------------------------- DNS


def _question(packet: bytes) -> tuple[str, int, int]:
    """The first question's name (lower case), its type, and where it ends."""
    labels, at = [], 12
    while packet[at]:
        labels.append(packet[at + 1 : at + 1 + packet[at]].decode("ascii").lower())
        at += 1 + packet[at]
    at += 1
    return ".".join(labels), int.from_bytes(packet[at : at + 2], "big"), at + 4


class Nameserver(asyncio.DatagramProtocol):
    """A DNS server on loopback. Names under a silenced suffix get no answer
    at all (the query is read and dropped, as a black-holed server does);
    every other A query is answered 127.0.0.1, AAAA with no address."""

    def __init__(self) -> None:
        self.silenced: set[str] = {"silent.example"}
        self.dropped: Counter[str] = Counter()  # names whose queries were dropped
        self.port = 0
        self._transport: asyncio.DatagramTransport | None = None
        self._suffixes = itertools.count(1)

    def new_suffix(self, zone: str) -> str:
        """A zone no earlier phase used, so what is counted is this phase's."""
        return f"p{next(self._suffixes)}.{zone}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(
            lambda: self, local_addr=("127.0.0.1", 0)
        )
        self.port = self._transport.get_extra_info("sockname")[1]

    def stop(self) -> None:
        assert self._transport is not None
        self._transport.close()

    def dropped_under(self, suffix: str) -> int:
        return sum(1 for name in self.dropped if name.endswith(f".{suffix}"))

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        try:
            name, qtype, end = _question(data)
        except (IndexError, UnicodeDecodeError):
            return
        if any(name == s or name.endswith(f".{s}") for s in self.silenced):
            self.dropped[name] += 1
            return
        answers = 1 if qtype == 1 else 0
        header = data[:2] + bytes([0x81 | (data[2] & 0x01), 0x80]) + b"\x00\x01"
        header += answers.to_bytes(2, "big") + b"\x00\x00\x00\x00"
        # TTL 0: c-ares keeps no answer, so a name silenced after it was
        # registered is asked again at delivery, in the same process too.
        record = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04\x7f\x00\x00\x01"
        assert self._transport is not None
        self._transport.sendto(header + data[12:end] + record * answers, addr)


# ---------------------------------------------------------------- receivers


class Receiver:
    """An asyncio HTTP/1.1 receiver. Answering: 204 at once, keep-alive, and
    notes when each submission's event came. Hanging: reads the request and
    never answers, until `release()` closes what it holds (from then on it
    answers at once again, so nothing A queued lingers into the next phase)."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}  # submission id -> time.monotonic()
        self.received = 0
        self.hanging = False
        self.held = 0
        self.peak_held = 0
        self.port = 0
        self._held: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self.release()
        self._server.close()

    def hang(self) -> None:
        self.hanging, self.peak_held = True, 0

    def release(self) -> None:
        self.hanging = False
        for writer in list(self._held):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                body = await read_request(reader)
                now = time.monotonic()
                self.received += 1
                if self.hanging:
                    self.held += 1
                    self.peak_held = max(self.peak_held, self.held)
                    self._held.add(writer)
                    try:
                        await reader.read()  # until the sender gives up, or release()
                    finally:
                        self.held -= 1
                        self._held.discard(writer)
                    return
                submission = submission_of(body)
                if submission is not None:
                    self.arrivals[submission] = now
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the sender closed, or the run is over
        finally:
            writer.close()


# ---------------------------------------------------------------- organizations


@dataclass(frozen=True)
class Tenant:
    key: str
    form: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def _tenants(url: str, count: int) -> list[Tenant]:
    """Organizations made through the service's own code, each with an owner's
    key that may do everything and a published form."""
    engine = create_engine(url)
    made = []
    try:
        async with create_sessionmaker(engine)() as session:
            owner = await user_service.create(
                session, f"{new_id('u')}@example.com", "correct horse battery"
            )
            for index in range(count):
                org = await organization_service.create(session, f"isolation {index}", Plan.pro)
                await member_service.add_directly(session, org.id, owner, Role.owner)
                created = await api_key_service.create(session, org, owner, "bench", SCOPES)
                form = await form_service.create(
                    session,
                    org.id,
                    "Isolation",
                    BlockList.validate_python(BLOCKS),
                    slug=new_id("s").replace("_", "-"),
                    status="published",
                )
                made.append(Tenant(created.secret, form.id))
            await session.commit()
    finally:
        await dispose(engine)
    return made


async def _endpoint(client: aiohttp.ClientSession, org: Tenant, url: str) -> str:
    async with client.post(
        "/v1/webhook-endpoints", json={"url": url}, headers=org.headers
    ) as created:
        if created.status != 201:
            raise RuntimeError(f"endpoint {url}: {created.status} {await created.text()}")
        return str((await created.json())["id"])


async def _submit(client: aiohttp.ClientSession, org: Tenant) -> None:
    async with client.post(
        f"/v1/forms/{org.form}/submissions", json={"answers": ANSWERS}, headers=org.headers
    ) as posted:
        if posted.status != 201:
            raise RuntimeError(f"submission: {posted.status} {await posted.text()}")


async def _delete_endpoints(client: aiohttp.ClientSession, org: Tenant, ids: list[str]) -> None:
    for endpoint_id in ids:
        async with client.delete(f"/v1/webhook-endpoints/{endpoint_id}", headers=org.headers):
            pass


async def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # noqa: ASYNC110 - counters here
        await asyncio.sleep(0.05)
    return condition()


# ---------------------------------------------------------------- what A does


@dataclass
class Stage:
    """What the benchmark runs in this process and hands to each phase."""

    base: str
    processes: int
    quiet: Receiver  # B's receiver (and A's, for names that should hang)
    stuck: Receiver  # A's hanging receiver
    dns: Nameserver
    share: int  # A's slots in all: its per-process share times the processes


class Load:
    """One thing A does; `start` returns once it bites, `stop` undoes it and
    says what A did."""

    name = "quiet"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        return None

    async def stop(self) -> str:
        return ""


class HangingEndpoints(Load):
    name = "hanging endpoints"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        self.stage, self.a, self.client = stage, a, client
        stage.stuck.hang()
        url = f"http://127.0.0.1:{stage.stuck.port}"
        self.ids = [await _endpoint(client, a, f"{url}/a{i}") for i in range(MAX_ENDPOINTS)]
        for _ in range(BACKLOG):
            await _submit(client, a)
        self.poster = asyncio.create_task(_keep_posting(client, a))
        await _until(lambda: stage.stuck.held >= stage.share, 30)

    async def stop(self) -> str:
        self.poster.cancel()
        await _delete_endpoints(self.client, self.a, self.ids)
        stuck = self.stage.stuck
        held = f"{stuck.peak_held} of A's requests held at once (its share: {self.stage.share})"
        stuck.release()
        return held


async def _keep_posting(client: aiohttp.ClientSession, org: Tenant) -> None:
    while True:
        await asyncio.sleep(1)
        await _submit(client, org)


class EndpointChurn(Load):
    """Endpoints that come and go while their deliveries are being sent:
    A's receiver answers at once, A posts five submissions a second, and one
    client deletes A's oldest endpoint and adds another, back to back."""

    name = "endpoint churn"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        self.a, self.client = a, client
        url = f"http://127.0.0.1:{stage.stuck.port}"  # not hanging: it answers 204 at once
        self.ids = [await _endpoint(client, a, f"{url}/c{i}") for i in range(CHURNED)]
        self.deleted = 0

        async def post() -> None:
            while True:
                await _submit(client, a)
                await asyncio.sleep(0.2)

        async def churn() -> None:
            for number in itertools.count(CHURNED):
                await _delete_endpoints(client, a, self.ids[:1])
                self.deleted += 1
                self.ids = [*self.ids[1:], await _endpoint(client, a, f"{url}/c{number}")]

        self.tasks = [asyncio.create_task(post()), asyncio.create_task(churn())]
        await asyncio.sleep(1)

    async def stop(self) -> str:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await _delete_endpoints(self.client, self.a, self.ids)
        return f"{self.deleted} of A's endpoints deleted and replaced"


class NamesAtRegistration(Load):
    def __init__(self, clients: int) -> None:
        self.clients = clients
        self.name = f"names at registration x{clients}"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        suffix = stage.dns.new_suffix("silent.example")
        numbers = itertools.count()
        self.answers: dict[str, list[float]] = {}  # outcome -> seconds each took
        self.stage, self.suffix = stage, suffix

        async def register() -> None:
            while True:
                started = time.monotonic()
                url = f"http://r{next(numbers)}.{suffix}:9/hook"
                try:
                    async with client.post(
                        "/v1/webhook-endpoints", json={"url": url}, headers=a.headers
                    ) as answer:
                        body = await answer.read()
                    outcome = _outcome(answer.status, body)
                except aiohttp.ClientError as error:
                    outcome = type(error).__name__
                self.answers.setdefault(outcome, []).append(time.monotonic() - started)
                if outcome == "201":  # it resolved after all: keep under the limit
                    await _delete_endpoints(client, a, [json.loads(body)["id"]])

        self.tasks = [asyncio.create_task(register()) for _ in range(self.clients)]
        await _until(lambda: stage.dns.dropped_under(suffix) >= self.clients, 10)

    async def stop(self) -> str:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        dropped = self.stage.dns.dropped_under(self.suffix)
        if not self.answers:
            return f"none of A's registrations answered yet; {dropped} names' lookups dropped"
        answered = ", ".join(
            f"{len(took)} x {outcome} in {median(took):.1f} s"
            for outcome, took in sorted(self.answers.items(), key=lambda item: -len(item[1]))
        )
        return f"A's registrations answered {answered} (median); {dropped} names' lookups dropped"


def _outcome(status: int, body: bytes) -> str:
    """The status, and for a refused URL which refusal: the lookup's deadline
    passed, or the resolver gave up on the name first."""
    if status != 422:
        return str(status)
    if b"no DNS answer" in body:
        return "422 (no DNS answer)"
    if b"does not resolve" in body:
        return "422 (does not resolve)"
    return "422"


class NamesAtDelivery(Load):
    name = "names at delivery"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        self.suffix = stage.dns.new_suffix("late.example")
        self.stage, self.a, self.client = stage, a, client
        port = stage.quiet.port
        self.ids = [
            await _endpoint(client, a, f"http://d{i}.{self.suffix}:{port}/late")
            for i in range(LATE_ENDPOINTS)
        ]
        stage.dns.silenced.add(self.suffix)  # from now on these names never answer
        for _ in range(BACKLOG):
            await _submit(client, a)
        self.poster = asyncio.create_task(_keep_posting(client, a))
        wanted = min(LATE_ENDPOINTS, stage.share)
        await _until(lambda: stage.dns.dropped_under(self.suffix) >= wanted, 30)

    async def stop(self) -> str:
        self.poster.cancel()
        await _delete_endpoints(self.client, self.a, self.ids)
        self.stage.dns.silenced.discard(self.suffix)
        names = self.stage.dns.dropped_under(self.suffix)
        return f"{names} of A's {LATE_ENDPOINTS} names looked up and left unanswered"


# ---------------------------------------------------------------- heavy forms


def _rules_form(rules: int) -> dict[str, Any]:
    """One page of ten numbers and `rules` rules of about 500 parts, each
    setting a variable: every post checks them all (the hostile pass's form
    of 2026-12-07 at 200 rules: 783 KB)."""
    condition = {"and": [{">=": [{"var": f"q{i % 10}"}, -i]} for i in range(166)]}
    return {
        "title": f"Heavy rules x{rules}",
        "blocks": [{"type": "number", "key": f"q{i}", "title": f"Q{i}"} for i in range(10)],
        "variables": [{"name": "s", "type": "number", "initial": 0}],
        "logic": [
            {"if": condition, "then": [{"set": "s", "to": {"+": [{"var": "vars.s"}, 1]}}]}
            for _ in range(rules)
        ],
    }


def _page_form(dropdowns: int, recall: bool) -> dict[str, Any]:
    """One page of `dropdowns` dropdowns of 1,000 options, each option's
    label recalling a hidden field when `recall` (the page is drawn for
    every GET)."""
    label = " {{who}}" if recall else ""
    return {
        "title": f"Heavy page x{dropdowns}{' with recall' if recall else ''}",
        "hiddenFields": [{"key": "who"}],
        "blocks": [
            {
                "type": "dropdown",
                "key": f"d{i}",
                "title": f"Pick {i}",
                "options": [{"value": f"o{j}", "label": f"Option {j}{label}"} for j in range(1000)],
            }
            for i in range(dropdowns)
        ],
    }


HEAVY_ANSWERS = {f"q{i}": i for i in range(10)}
WHO = "w" * 200  # what the heavy page's link fills its hidden field with


def _heavy_forms(kind: str) -> Iterator[dict[str, Any]]:
    """A's candidates for its costliest form, costliest first: those this
    checkout's bound on a form's cost takes (when it has one), else those of
    the bounds before it. Made one at a time: each costs a second to price."""
    forms: Iterator[dict[str, Any]]
    if kind in ("posts", "saves"):
        forms = (_rules_form(rules) for rules in range(200, 0, -5))
    else:
        forms = itertools.chain(
            [_page_form(20, recall=True)],
            (_page_form(n, recall=False) for n in range(20, 0, -1)),
        )
    try:
        from formsapi.language.cost import MAX_UNITS, cost_of
    except ImportError:  # a build from before the bound: its own refusals tell
        yield from forms
        return
    yield from (form for form in forms if _units(form, cost_of) <= MAX_UNITS)


def _units(body: dict[str, Any], cost_of: Callable[[Layout], Any]) -> int:
    fields = {k: v for k, v in body.items() if k not in ("title", "blocks")}
    blocks = BlockList.validate_python(body["blocks"])
    return int(cost_of(Layout(blocks, Definition(**fields))).units)


async def _heaviest(
    client: aiohttp.ClientSession, a: Tenant, kind: str
) -> tuple[str, dict[str, Any]]:
    """The costliest of the candidates the server takes, published: its id and body."""
    for body in _heavy_forms(kind):
        form = await _created(client, a, body)
        if form is None:
            continue
        published = {"status": "published"}
        async with client.patch(f"/v1/forms/{form}", json=published, headers=a.headers) as done:
            if done.status != 200:
                raise RuntimeError(f"heavy form: {done.status} {await done.text()}")
        return form, body
    raise RuntimeError("no heavy form was taken")


async def _created(client: aiohttp.ClientSession, a: Tenant, body: dict[str, Any]) -> str | None:
    """The form `body` made (None when refused as too costly): sent again
    with the same Idempotency-Key when the connection failed under it."""
    headers = {**a.headers, "Idempotency-Key": new_id("bench")}
    attempts = 3
    while True:
        attempts -= 1
        try:
            async with client.post("/v1/forms", json=body, headers=headers) as made:
                if made.status == 422:
                    return None
                if made.status != 201:
                    raise RuntimeError(f"heavy form: {made.status} {await made.text()}")
                return str((await made.json())["id"])
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
            if not attempts:
                raise


class HeavyForm(Load):
    """A's costliest form the bounds allow, from `clients` clients back to
    back: posted over the API (its rules checked each time), its hosted
    page read (drawn each time), or saved again whole (a new version each
    time: its JSON read, checked and counted)."""

    def __init__(self, kind: str, clients: int) -> None:
        self.kind, self.clients = kind, clients
        self.name = f"heavy form {kind} x{clients}"

    async def start(self, stage: Stage, a: Tenant, client: aiohttp.ClientSession) -> None:
        form, whole = await _heaviest(client, a, self.kind)
        self.title = str(whole["title"])
        self.answers: dict[str, list[float]] = {}
        saves = itertools.count()

        async def one() -> None:
            started = time.monotonic()
            try:
                if self.kind == "posts":
                    request = client.post(
                        f"/v1/forms/{form}/submissions",
                        json={"answers": HEAVY_ANSWERS},
                        headers=a.headers,
                    )
                elif self.kind == "saves":
                    again = {**whole, "title": f"{whole['title']} {next(saves)}"}
                    request = client.patch(f"/v1/forms/{form}", json=again, headers=a.headers)
                else:
                    request = client.get(f"/f/{form}?who={WHO}")
                async with request as answer:
                    await answer.read()
                outcome = str(answer.status)
            except aiohttp.ClientError as error:
                outcome = type(error).__name__
            self.answers.setdefault(outcome, []).append(time.monotonic() - started)

        async def keep_going() -> None:
            while True:
                await one()

        self.tasks = [asyncio.create_task(keep_going()) for _ in range(self.clients)]
        await _until(lambda: sum(map(len, self.answers.values())) >= self.clients, 60)

    async def stop(self) -> str:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        answered = ", ".join(
            f"{len(took)} x {outcome} in {median(took) * 1000:,.0f} ms"
            for outcome, took in sorted(self.answers.items(), key=lambda item: -len(item[1]))
        )
        return f"A's form “{self.title}”: {answered} (median)"


def _loads(names: Sequence[str]) -> list[Load]:
    made: dict[str, Callable[[], Load]] = {
        "quiet": Load,
        "hanging endpoints": HangingEndpoints,
        "names at registration x3": lambda: NamesAtRegistration(3),
        "names at registration x12": lambda: NamesAtRegistration(12),
        "names at delivery": NamesAtDelivery,
        "endpoint churn": EndpointChurn,
        "heavy form posts x3": lambda: HeavyForm("posts", 3),
        "heavy form page x3": lambda: HeavyForm("page", 3),
        "heavy form saves x3": lambda: HeavyForm("saves", 3),
    }
    return [made[name]() for name in names]


# ---------------------------------------------------------------- what B does


@dataclass
class Phase:
    engine: str
    processes: int
    load: str
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: Counter[str] = field(default_factory=Counter)
    posted: int = 0
    deliveries: list[float] = field(default_factory=list)  # ms from the 201 to the receiver
    note: str = ""


EXPECTED = {"post submission": 201, "list submissions": 200, "get form": 200}
EXPECTED["hosted page post"] = 303


async def _quiet_organization(stage: Stage, b: Tenant, seconds: float, phase: Phase) -> None:
    """B's steady mix for `seconds`, each request on time whatever the
    others take; then its deliveries are waited for."""
    created: dict[str, float] = {}
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=64, keepalive_timeout=KEEP_ALIVE)
    async with aiohttp.ClientSession(stage.base, timeout=timeout, connector=connector) as client:
        requests: dict[str, Callable[[], Any]] = {
            "post submission": lambda: client.post(
                f"/v1/forms/{b.form}/submissions", json={"answers": ANSWERS}, headers=b.headers
            ),
            "list submissions": lambda: client.get(
                f"/v1/forms/{b.form}/submissions?limit=20", headers=b.headers
            ),
            "get form": lambda: client.get(f"/v1/forms/{b.form}", headers=b.headers),
            "hosted page post": lambda: client.post(
                f"/f/{b.form}", data=ANSWERS, allow_redirects=False
            ),
        }

        async def one(at: float, kind: str) -> None:
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            started = time.monotonic()
            try:
                async with requests[kind]() as response:
                    body = await response.read()
                    done = time.monotonic()
                if response.status == 201 and kind == "post submission":
                    created[json.loads(body)["id"]] = done
                if response.status != EXPECTED[kind]:
                    phase.errors[kind] += 1
            except (aiohttp.ClientError, TimeoutError):
                done = time.monotonic()
                phase.errors[kind] += 1
            phase.latencies[kind].append((done - started) * 1000)

        start = time.monotonic() + 0.1
        count = int(seconds / INTERVAL)
        await asyncio.gather(
            *(one(start + i * INTERVAL, KINDS[i % len(KINDS)]) for i in range(count))
        )
    arrivals = stage.quiet.arrivals
    await _until(lambda: all(id_ in arrivals for id_ in created), STRAGGLERS)
    phase.posted = len(created)
    # The receiver may note an arrival a moment before this process has read
    # the 201 that preceded it: that is no wait at all.
    phase.deliveries = [
        max(0.0, arrivals[id_] - at) * 1000 for id_, at in created.items() if id_ in arrivals
    ]


# ---------------------------------------------------------------- servers


@dataclass
class Processes:
    server: Server
    workers: list[subprocess.Popen[bytes]]
    logs: list[str]
    commands: list[str]

    def stop(self) -> None:
        for worker in self.workers:
            worker.terminate()
        for worker in self.workers:
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(5)
        self.server.stop()


def _env(url: str, redis: str, dns_port: int, engine: str) -> dict[str, str]:
    env = service_env(url, redis)
    env.update(
        {
            "FORMSAPI_SECRET_KEY": KEY,
            "FORMSAPI_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            "FORMSAPI_WEBHOOK_DNS_SERVERS": f"127.0.0.1:{dns_port}",
            # SQLite: the serving processes deliver; PostgreSQL: `formsapi worker` processes.
            "FORMSAPI_WEBHOOK_WORKER": "auto" if engine == "sqlite" else "off",
            # B's hosted page posts come from this address, as A's do.
            "FORMSAPI_PUBLIC_POSTS_PER_IP": "1000000",
            "FORMSAPI_PUBLIC_POSTS_PER_FORM": "1000000",
        }
    )
    return env


def _command(env: dict[str, str], argv: list[str]) -> str:
    shown = {k: v for k, v in env.items() if k != "FORMSAPI_REDIS_PREFIX"}
    settings = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(shown.items()))
    return f"{settings} {shlex.join(['formsapi', *argv[1:]])}"


def _start(env: dict[str, str], engine: str, processes: int, logs: Path) -> Processes:
    """`processes` serving processes; on PostgreSQL as many `formsapi worker`
    processes beside them (on SQLite the serving processes deliver)."""
    port = free_port()
    argv = [FORMSAPI, "serve", "--port", str(port), "--workers", str(processes)]
    argv.append("--no-access-log")
    server = Server(argv, env, port)
    commands, paths = [_command(env, argv)], [server.log.name]
    workers = []
    if engine == "postgresql":
        for index in range(processes):
            path = logs / f"worker-{index}-{port}.log"
            log: IO[bytes] = path.open("ab")
            workers.append(
                subprocess.Popen(
                    [FORMSAPI, "worker"],
                    env={**os.environ, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            log.close()
            paths.append(str(path))
        commands.append(f"{processes} x " + _command(env, [FORMSAPI, "worker"]))
    return Processes(server, workers, paths, commands)


async def _fresh_database(server: str) -> str:
    admin = await asyncpg.connect(f"{server}/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    return f"{server}/{DATABASE}"


async def _vacuum(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


# ---------------------------------------------------------------- the run


async def _engine_run(
    engine: str, args: argparse.Namespace, dns: Nameserver, logs: Path
) -> tuple[list[Phase], list[str]]:
    if engine == "postgresql":
        url = await _fresh_database(args.server)
    else:
        url = f"sqlite:///{logs / 'isolation.db'}"
    await asyncio.to_thread(migrate, url)  # alembic runs its own event loop
    loads = _loads(args.loads)
    busy = sum(1 for load in loads if load.name != "quiet")
    b, *others = await _tenants(url, 1 + busy * args.rounds * len(args.processes))
    spare = iter(others)
    if engine == "postgresql":
        await _vacuum(url)
        print("VACUUM ANALYZE after loading (autovacuum is off here)", file=sys.stderr)
    quiet, stuck = Receiver(), Receiver()
    await quiet.start()
    await stuck.start()
    phases: list[Phase] = []
    commands: list[str] = []
    try:
        for processes in args.processes:
            env = _env(url, args.redis, dns.port, engine)
            running = _start(env, engine, processes, logs)
            commands += [f"{engine}, {processes} process(es): `{c}`" for c in running.commands]
            for command in running.commands:
                print(f"# {engine}: {command}", file=sys.stderr)
            base = f"http://127.0.0.1:{running.server.port}"
            timeout = aiohttp.ClientTimeout(total=120)
            stage = Stage(base, processes, quiet, stuck, dns, processes * _share())
            try:
                connector = aiohttp.TCPConnector(keepalive_timeout=KEEP_ALIVE)
                async with aiohttp.ClientSession(
                    base, timeout=timeout, connector=connector
                ) as client:
                    await _endpoint(client, b, f"http://b.quiet.example:{quiet.port}/hook")
                    await _warm_up(stage, b, args.seconds)
                    for round_ in range(args.rounds):
                        for load in loads:
                            phase = Phase(engine, processes, load.name)
                            if engine == "postgresql":
                                await _vacuum(url)
                            a = next(spare) if load.name != "quiet" else b
                            await load.start(stage, a, client)
                            try:
                                await _quiet_organization(stage, b, args.seconds, phase)
                            finally:
                                phase.note = await load.stop()
                            phases.append(phase)
                            print(_progress(phase, round_), file=sys.stderr)
                            await asyncio.sleep(0.5)  # what A left behind settles
            finally:
                running.stop()
                print("# logs: " + " ".join(running.logs), file=sys.stderr)
    finally:
        await quiet.stop()
        await stuck.stop()
    return phases, commands


def _share() -> int:
    return int(DEFAULTS["webhook_organization_concurrency"].default)


async def _warm_up(stage: Stage, b: Tenant, seconds: float) -> None:
    """A moment of B alone, not counted: connections, caches, plans."""
    await _quiet_organization(stage, b, min(2.0, seconds), Phase("", 0, "warm-up"))


def _pct(values: Sequence[float], p: float) -> float:
    """Nearest rank: the smallest value at least p% of the values are at or below."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _progress(phase: Phase, round_: int) -> str:
    d = phase.deliveries
    worst = max((max(v) for v in phase.latencies.values() if v), default=math.nan)
    return (
        f"[load {os.getloadavg()[0]:.1f}] "
        f"{phase.engine} x{phase.processes} round {round_ + 1} {phase.load}: deliveries "
        f"{len(d)}/{phase.posted} p50 {_pct(d, 50):.0f} p99 {_pct(d, 99):.0f} "
        f"max {max(d, default=math.nan):.0f} ms; requests max {worst:.0f} ms, "
        f"errors {dict(phase.errors)}; {phase.note}"
    )


# ---------------------------------------------------------------- the report


@dataclass
class Figures:
    p50: float
    p99: float
    max: float  # the median round's
    worst: float  # of every round

    def cell(self) -> str:
        return f"{self.p50:,.0f} / {self.p99:,.0f} / {self.max:,.0f}"


def _figures(rounds: list[list[float]]) -> Figures:
    present = [r for r in rounds if r]
    if not present:
        return Figures(math.nan, math.nan, math.nan, math.nan)
    return Figures(
        median(_pct(r, 50) for r in present),
        median(_pct(r, 99) for r in present),
        median(max(r) for r in present),
        max(max(r) for r in present),
    )


def _verdict(quiet: Figures, loaded: Figures, budget: float, lost: int) -> str:
    added = loaded.worst - quiet.p50
    if lost:
        return f"**broken**: {lost} never arrived"
    return f"{added:,.0f} ms: {'holds' if added <= budget else '**broken**'}"


def report(phases: list[Phase], loads: list[str]) -> tuple[list[str], list[str]]:
    groups: dict[tuple[str, int, str], list[Phase]] = {}
    for phase in phases:
        groups.setdefault((phase.engine, phase.processes, phase.load), []).append(phase)
    delivery_rows, request_rows = [], []
    for engine, processes in dict.fromkeys((p.engine, p.processes) for p in phases):
        quiet = groups.get((engine, processes, "quiet"), [])
        quiet_delivery = _figures([p.deliveries for p in quiet])
        quiet_requests = {k: _figures([p.latencies[k] for p in quiet]) for k in KINDS}
        for load in loads:
            ran = groups.get((engine, processes, load), [])
            if not ran:
                continue
            posted = sum(p.posted for p in ran)
            arrived = sum(len(p.deliveries) for p in ran)
            loaded = _figures([p.deliveries for p in ran])
            worst_request = max(
                (_figures([p.latencies[k] for p in ran]).worst for k in KINDS), default=math.nan
            )
            errors = sum(sum(p.errors.values()) for p in ran)
            verdict = ""
            if load != "quiet":
                lost = posted - arrived
                verdict = _verdict(quiet_delivery, loaded, DELIVERY_BUDGET_MS, lost)
            delivery_rows.append(
                f"| {engine} | {processes} | {load} | {arrived:,} of {posted:,} "
                f"| {quiet_delivery.cell()} | {loaded.cell()} | {loaded.worst:,.0f} | {verdict} "
                f"| {worst_request:,.0f} | {errors} | {ran[-1].note} |"
            )
            if load == "quiet":
                continue
            for kind in KINDS:
                figures = _figures([p.latencies[kind] for p in ran])
                kind_errors = sum(p.errors[kind] for p in ran)
                request_rows.append(
                    f"| {engine} | {processes} | {load} | {kind} "
                    f"| {quiet_requests[kind].cell()} | {figures.cell()} | {figures.worst:,.0f} "
                    f"| {_verdict(quiet_requests[kind], figures, REQUEST_BUDGET_MS, 0)} "
                    f"| {kind_errors} |"
                )
    return delivery_rows, request_rows


def _commit() -> str:
    """The checkout's commit, and whether tracked files differ from it."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("log", "-1", "--format=%h") + (" with uncommitted changes" if dirty else "")


def _note(
    args: argparse.Namespace, commands: list[str], loads: tuple[float, float], commits: list[str]
) -> str:
    d = {name: field.default for name, field in DEFAULTS.items()}
    settings = (
        f"webhook settings at their defaults: concurrency {d['webhook_concurrency']} a process, "
        f"{d['webhook_organization_concurrency']} for one organization, "
        f"{d['webhook_endpoint_concurrency']} for one endpoint, timeout "
        f"{d['webhook_timeout']:g} s, DNS lookup timeout {d['webhook_dns_timeout']:g} s"
    )
    at = (
        commits[0]
        if commits[0] == commits[1]
        else f"{commits[0]} at the start, {commits[1]} at the end"
    )
    return "\n".join(
        [
            f"Commit: {at}.  ",
            f"{args.rounds} interleaved rounds of {args.seconds:g} s a phase; figures are the "
            "median round's, in ms, from B's 201 to its receiver (deliveries) or from sending to "
            "the whole answer (requests); *worst* is the largest of any round, and the added "
            "delay is that worst less the quiet median. B sends a request every "
            f"{INTERVAL * 1000:.0f} ms ({', '.join(KINDS)} in turn). A is a new organization each "
            "phase. On SQLite the serving processes deliver (FORMSAPI_WEBHOOK_WORKER=auto); on "
            "PostgreSQL as many `formsapi worker` processes run beside as many serving ones. "
            f"The {settings}; rate limits raised, Redis their store. PostgreSQL: VACUUM ANALYZE "
            "after loading and before every phase (autovacuum is off on this machine). "
            "Every lookup goes to a DNS server in the benchmark "
            "(FORMSAPI_WEBHOOK_DNS_SERVERS), which drops A's queries unanswered. The machine's "
            f"load average was {loads[0]:.1f} at the start and {loads[1]:.1f} at the end "
            f"({os.cpu_count()} cores, shared with others' work). Commands:",
            "",
            *(f"- {command}" for command in commands),
        ]
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument(
        "--redis", default=os.environ.get("FORMSAPI_BENCH_REDIS", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument(
        "--engines", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"]
    )
    parser.add_argument("--processes", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--loads", nargs="+", default=list(LOADS), choices=LOADS)
    parser.add_argument("--seconds", type=float, default=20, help="of B's traffic a phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if "quiet" not in args.loads:
        args.loads.insert(0, "quiet")

    started_load, started_at = os.getloadavg()[0], _commit()
    dns = Nameserver()
    await dns.start()
    phases: list[Phase] = []
    commands: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as scratch:
        logs = Path(os.environ.get("BENCH_ISOLATION_LOGS") or scratch)
        os.makedirs(logs, exist_ok=True)
        try:
            for engine in args.engines:
                ran, used = await _engine_run(engine, args, dns, logs)
                phases += ran
                commands += used
        finally:
            dns.stop()
    delivery_rows, request_rows = report(phases, args.loads)
    note = _note(args, commands, (started_load, os.getloadavg()[0]), [started_at, _commit()])
    delivery = section(
        "organizations cannot stall each other (issue 25)",
        note + "\n\nB's deliveries while A does each thing (quiet beside loaded: "
        "p50 / p99 / max ms, the median round's); promise: no more than "
        f"{DELIVERY_BUDGET_MS / 1000:g} s added:",
        [
            "engine",
            "delivering processes",
            "A does",
            "B's deliveries arrived",
            "quiet p50 / p99 / max",
            "loaded p50 / p99 / max",
            "loaded worst",
            "added delay (promise: 2 s)",
            "B's slowest request",
            "B's errors",
            "A",
        ],
        delivery_rows,
    )
    requests = "\n".join(
        [
            f"B's requests while A registers names that never resolve (and during the other "
            f"loads); promise: no more than {REQUEST_BUDGET_MS / 1000:g} s added:",
            "",
            "| engine | processes | A does | B's request | quiet p50 / p99 / max "
            "| loaded p50 / p99 / max | loaded worst | added delay (promise: 1 s) | errors |",
            "|---|---|---|---|---|---|---|---|---|",
            *request_rows,
            "",
        ]
    )
    publish(delivery + "\n" + requests, keep=not args.no_record)


if __name__ == "__main__":
    asyncio.run(main())
