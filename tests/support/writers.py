"""Fifty writers creating, editing and deleting submissions at random over
the API, keeping what the servers acknowledged: the workload of the tests
that show a copy ends equal to the server's data."""

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.shared_database import Setup

WRITERS = 50
# On a busy machine the writers go on past their time until this many
# creates are acknowledged (for at most a minute): enough to show something.
ENOUGH = 150
ANSWERS = {"name": "Ada", "colors": "red"}


@dataclass
class Acknowledged:
    """What the servers said they did: creates by form, acknowledged versions
    of edits, deletes."""

    created: dict[str, str] = field(default_factory=dict)  # submission -> form
    versions: dict[str, int] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    live: dict[str, list[str]] = field(default_factory=dict)  # form -> submissions


class Writers:
    def __init__(self, setup: Setup, clients: list[httpx.AsyncClient], seed: int) -> None:
        self.setup = setup
        self.clients = clients
        self.down: set[int] = set()  # servers killed: no more requests to them
        self.rng = random.Random(seed)  # noqa: S311 - a reproducible workload
        self.seen = Acknowledged(live={form: [] for form in setup.forms})

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        up = [n for n in range(len(self.clients)) if n not in self.down]
        client = self.clients[self.rng.choice(up)]
        try:
            return await client.request(method, path, **kwargs)
        except httpx.TransportError:
            return None  # not acknowledged: it may or may not have happened

    async def write(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        give_up = until + 60

        def writing() -> bool:
            now = loop.time()
            return now < until or (len(self.seen.created) < ENOUGH and now < give_up)

        while writing():
            form = self.rng.choice(self.setup.forms)
            live = self.seen.live[form]
            url = f"/v1/forms/{form}/submissions"
            roll = self.rng.random()
            if roll < 0.6 or len(live) < 5:
                response = await self._send("POST", url, json={"answers": ANSWERS})
                if response is not None and response.status_code == 201:
                    created = response.json()
                    self.seen.created[created["id"]] = form
                    self.seen.versions[created["id"]] = 1
                    live.append(created["id"])
            elif roll < 0.85:
                target = self.rng.choice(live)
                name = f"edit-{self.rng.randrange(10**6)}"
                answers = {"name": name}
                response = await self._send("PATCH", f"{url}/{target}", json={"answers": answers})
                if response is not None and response.status_code == 200:
                    version = response.json()["version"]
                    self.seen.versions[target] = max(self.seen.versions[target], version)
            else:
                target = live.pop(self.rng.randrange(len(live)))
                response = await self._send("DELETE", f"{url}/{target}")
                if response is not None and response.status_code == 204:
                    self.seen.deleted.add(target)
            # 408 and 503: a busy server turned it away, unacknowledged.
            assert response is None or response.status_code in (200, 201, 204, 404, 408, 503), (
                response.status_code,
                response.text,
            )
