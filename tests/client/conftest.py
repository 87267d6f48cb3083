"""The client against real `formsapi serve` processes, one per engine (shared
by the test files a worker runs; a file that needs other settings starts its
own), each on a database of its own with an organization and a key that may
do everything. Never a mock transport: tests make the forms they count."""

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from formsapi_client import Client
from formsapi_client.models import FormDetail
from tests.conftest import scratch_postgres
from tests.support.factories import BLOCKS
from tests.support.servers import Server, clean_env, start_server, stop_servers
from tests.support.shared_database import Setup, shared_database, tenant

# Rate limits off unless a test file turns them on; webhooks may go to a
# receiver on loopback and are delivered by the server itself on both engines.
SETTINGS = {
    "rate_limit_enabled": "false",
    "secret_key": "c" * 32,
    "webhook_allow_private_networks": "true",
    "webhook_worker": "on",
}


@dataclass(frozen=True)
class Live:
    base_url: str
    secret: str
    database_url: str
    server: Server = field(compare=False, repr=False)


@contextlib.contextmanager
def live_server(request: pytest.FixtureRequest, directory: Path, **settings: str) -> Iterator[Live]:
    """A server on a fresh database of the engine `request.param` names."""
    with shared_database(request, directory) as url:
        setup = asyncio.run(tenant(url, forms=0))
        env = clean_env(database_url=url, **{**SETTINGS, **settings})
        server = start_server(directory, env, "server", ("--no-access-log",))
        try:
            server.wait_until_healthy()
            yield Live(server.base_url, setup.secret, url, server)
        finally:
            stop_servers([server])


@pytest.fixture(scope="session")
def _started() -> Iterator[tuple[contextlib.ExitStack, dict[str, Live]]]:
    with contextlib.ExitStack() as stack:
        yield stack, {}


@pytest.fixture(params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _started: tuple[contextlib.ExitStack, dict[str, Live]],
) -> Live:
    """The worker's server for this engine, started on first use and kept to
    the end of the session. (A session fixture parametrized by engine would be
    stopped and started again for every file: `--dist loadfile` runs a file's
    SQLite and PostgreSQL tests together.)"""
    stack, started = _started
    if request.param not in started:
        directory = tmp_path_factory.mktemp("client")
        started[request.param] = stack.enter_context(live_server(request, directory))
    live = started[request.param]
    # A server gone mid-run frees its port for another's: say so, rather
    # than let the tests talk to whichever server has the port now.
    if live.server.process.poll() is not None:
        pytest.fail(f"the {request.param} server exited mid-run:\n{live.server.stderr}")
    return live


@pytest.fixture
def client(live: Live) -> Iterator[Client]:
    with Client(live.base_url, live.secret) as client:
        yield client


def published_form(client: Client, title: str = "Client test") -> FormDetail:
    """A new form with the factories' blocks (name and colors required), published."""
    form = client.forms.create(title, BLOCKS)
    return client.forms.update(form.id, status="published")


ANSWERS = {"name": "Ada", "colors": "red"}


# formsapi-sync's tests (test_sync_tool*.py).


@pytest.fixture
def setup(live: Live) -> Setup:
    """An organization of the test's own, with a key and two forms, on the
    worker's server for this engine (one per engine, not one per test)."""
    return asyncio.run(tenant(live.database_url, forms=2))


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'copy.db'}"
    else:
        with scratch_postgres(request.getfixturevalue("postgres_url")) as url:
            yield url
