# ruff: noqa: E402 - the garbage collector is paused before the imports (gc.disable below)
"""Fixtures: real SQLite and PostgreSQL databases, a real Redis, an ASGI client.

Every API test runs once per engine. A service that is not reachable skips its
tests locally and fails them when CI is set.
"""

import asyncio
import compileall
import gc
import itertools
import os
import re
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

# Paused before the imports below, until the tests are collected (pytest_collection).
gc.disable()

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from fastapi import FastAPI
from pwdlib.hashers.argon2 import Argon2Hasher
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql import ClauseElement, Executable

from formsapi import tenancy
from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.engine import create_engine
from formsapi.db.hot import HotStatement
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from formsapi.models import Base
from formsapi.user import service as user_service
from tests.support import forks
from tests.support.contract import Contract

IN_CI = bool(os.environ.get("CI"))

# Tests send a hosted page's answers moments after loading it, sooner than
# the minimum fill time lets a person: it is off for the apps built in this
# process, and on where a test sets it (tests/spam/test_fill_time.py). Server
# processes the tests start keep the default.
os.environ.setdefault("FORMSAPI_MIN_FILL_SECONDS", "0")

# Argon2id with the library's defaults costs ~50 ms a hash: tests hash cheaply.
# Server processes the tests start keep the production parameters.
user_service.use_hasher(Argon2Hasher(time_cost=1, memory_cost=64, parallelism=1))


def _interrupted(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


# Ctrl-C stops the run as before. asyncio.Runner.run, which pytest-asyncio
# calls for every async fixture and test, puts its own handler in place of
# Python's default one and takes it back; both steps convert the handler to an
# enum first, and the failed conversion's message holds repr() of the handler,
# whose task's repr holds the fixture's value: a twentieth of a run's CPU.
# With this handler in place, the runner leaves SIGINT alone.
signal.signal(signal.SIGINT, _interrupted)

POSTGRES_URL = os.environ.get(
    "FORMSAPI_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("FORMSAPI_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


# The files that take longest, longest first (seconds of a two-worker run's
# --durations, summed per file). The workers take whole files in the order of
# the collection (`--dist loadfile --no-loadscope-reorder`); xdist's own order,
# most tests first, left files of a few long tests (the benchmark kit, the
# fuzz run) to the end, one worker running them while the other sat idle.
# A file missing here only loses its head start.
SLOWEST_FILES = (
    "tests/test_bench.py",
    "tests/test_hostile_urls.py",
    "tests/docs/test_examples.py",
    "tests/docs/test_site.py",
    "tests/e2e/test_browser.py",
    "tests/client/test_sync_tool_watch.py",
    "tests/test_fuzz.py",
    "tests/test_bench_sync.py",
    "tests/test_webhooks_chaos.py",
    "tests/test_server.py",
    "tests/e2e/test_builder_browser.py",
    "tests/test_export_draining.py",
    "tests/webhook/test_isolation.py",
    "tests/test_sync.py",
    "tests/cli/test_cli.py",
    "tests/webhook/test_delivery.py",
    "tests/client/test_sync_tool.py",
    "tests/submission/test_intake_killed.py",
    "tests/submission/test_endpoints.py",
    "tests/web/test_members.py",
    "tests/form/test_question_types.py",
    "tests/form/test_logic_api.py",
    "tests/event/test_event_order.py",
    "tests/client/test_rate_limits.py",
    "tests/client/test_async.py",
    "tests/web/test_webhooks.py",
    "tests/web/test_sign_in.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than the cores. A worker waits on its
    servers, browsers and timed workloads; with one per core both cores sat
    idle an eighth of a run, with the third they do not (bench/RESULTS.md).
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    # The cores this process may run on; macOS has no affinity, only a count.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) + 1
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    """Compile the service's and the client's modules once, on the run's
    first process: where PYTHONDONTWRITEBYTECODE is set (as on CI's
    machine), every server and CLI process a test starts would compile them
    all again, a second of CPU each (bench/RESULTS.md)."""
    if not hasattr(config, "workerinput"):  # not an xdist worker
        root = Path(__file__).resolve().parents[1]
        for source in (root / "src", root / "client" / "src"):
            compileall.compile_dir(source, quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Iterator[None]:
    """The run imports the service and every test module with the cyclic
    garbage collector paused (above). What those imports build lives as long
    as the run, and the collector, run every few hundred allocations, walks
    it again and again while it is made and frees next to nothing: a third of
    the CPU of collecting the suite, in each worker (bench/RESULTS.md). Once
    the tests are collected, the garbage among it is freed and the rest left
    out of later collections (gc.freeze), as in a forked server; on xdist's
    controller, which collects nothing, the collector just starts again."""
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


# Tests between two freezes of what the run holds (pytest_runtest_teardown).
_TESTS_PER_FREEZE = 25
_tests_done = itertools.count(1)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown() -> None:
    """What outlives a test (engines, caches, compiled statements, the
    collector's own survivors) grows as the run goes, and each of the
    collector's full collections walks all of it again. Every few tests,
    after the test's fixtures are gone, the garbage is collected and what
    remains is frozen too: a full collection then walks only what the last
    few tests left (bench/RESULTS.md)."""
    if next(_tests_done) % _TESTS_PER_FREEZE == 0:
        gc.collect()
        gc.freeze()


def pytest_sessionfinish() -> None:
    forks.kill_left_running()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest files first, the rest in the order collected."""
    rank = {path: n for n, path in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def service_unavailable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
    pytest.skip(reason)


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 2):
            return True
    except OSError:
        return False


async def _reset(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(Base.metadata.drop_all)
        await connection.execute(text("DROP TABLE IF EXISTS alembic_version"))


# Every statement the suite runs on tenant tables must be limited to one
# organization (formsapi.tenancy): a forgotten filter fails the test that ran it.
_UNSCOPED: list[str] = []


# The verdict on each shape of statement, for the session: statements of one
# shape (SQLAlchemy's compilation cache key: the same key, the same SQL) touch
# and filter the same tables. Walking every statement's tree on every
# execution cost a few percent of the suite's CPU.
_VERDICTS: dict[tuple[Any, ...], list[str]] = {}


def _shape(statement: object, options: dict[str, Any]) -> tuple[Any, ...] | None:
    """What the verdict on `statement` depends on, or None when SQLAlchemy
    cannot key it (it is then judged every time)."""
    if not isinstance(statement, ClauseElement):
        return None
    try:
        key = statement._generate_cache_key()  # memoized: compiling asks for it too
    except Exception:  # a construct that cannot be keyed: judged every time
        return None
    if key is None:
        return None
    marked = tenancy.UNSCOPED in options or (
        isinstance(statement, Executable) and tenancy.UNSCOPED in statement.get_execution_options()
    )
    return (key.key, marked, "compiled_cache" in options)


def _check_tenant_scope(
    connection: object, statement: object, multiparams: object, params: object, options: Any
) -> None:
    options = dict(options)
    shape = _shape(statement, options)
    tables = _VERDICTS.get(shape) if shape is not None else None
    if tables is None:
        tables = tenancy.violations(statement, options)
        if shape is not None:
            _VERDICTS[shape] = tables
    if tables:
        try:
            text = str(statement)
        except Exception:  # a construct only a dialect can render
            text = repr(statement)
        _UNSCOPED.append(f"{', '.join(tables)} not limited to an organization in: {text}")


@pytest.fixture(scope="session", autouse=True)
def _tenant_scope_checked() -> Iterator[None]:
    event.listen(Engine, "before_execute", _check_tenant_scope)
    # The hot reads run on the driver, past SQLAlchemy's events: judged as they run.
    run_hot = HotStatement.all

    async def checked(hot: HotStatement, session: Any, parameters: Any) -> Any:
        _check_tenant_scope(None, hot.statement, None, None, {})
        return await run_hot(hot, session, parameters)

    HotStatement.all = checked  # type: ignore[method-assign,assignment]
    yield
    HotStatement.all = run_hot  # type: ignore[method-assign]
    event.remove(Engine, "before_execute", _check_tenant_scope)


@pytest.fixture(autouse=True)
def _every_statement_scoped() -> Iterator[None]:
    _UNSCOPED.clear()
    yield
    assert not _UNSCOPED, "\n\n".join(_UNSCOPED)


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("db") / "formsapi.db"
    migrate(f"sqlite:///{path}")
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def postgres_url(worker_id: str) -> str:
    """The test database; with parallel workers (pytest-xdist), each worker's
    own beside it (`test_gw0`, ...), created on first use."""
    if not reachable(POSTGRES_URL):
        service_unavailable(f"PostgreSQL is not reachable at {POSTGRES_URL}")
    url = POSTGRES_URL
    if worker_id != "master":
        url = f"{POSTGRES_URL}_{worker_id}"
    asyncio.run(_create_database(url))
    # Start from an empty schema: earlier runs or other branches may have left tables.
    engine = create_engine(url)
    asyncio.run(_reset(engine))
    asyncio.run(engine.dispose())
    migrate(url)
    return url


# A test database's commits return without waiting for the WAL to reach the
# disk: only a crash of PostgreSQL itself could lose one, and no test crashes
# it (the tests that kill a process kill our server, whose acknowledged
# commits PostgreSQL still holds). A commit costs a third of the time.
_TEST_DATABASE_SETTINGS = {"synchronous_commit": "off"}


async def _create_database(url: str, **settings: str) -> None:
    """The database at `url`, created if missing, with `settings` (SET name =
    value) and the test databases' own."""
    server, name = url.rsplit("/", 1)
    connection = await asyncpg.connect(f"{server}/postgres")
    try:
        if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await connection.execute(f'CREATE DATABASE "{name}"')
        for setting, value in {**_TEST_DATABASE_SETTINGS, **settings}.items():
            await connection.execute(f"ALTER DATABASE \"{name}\" SET {setting} = '{value}'")
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not reachable(REDIS_URL):
        service_unavailable(f"Redis is not reachable at {REDIS_URL}")
    return REDIS_URL


@contextmanager
def scratch_postgres(postgres_url: str, **settings: str) -> Iterator[str]:
    """An empty PostgreSQL database of the test's own, with database-level
    `settings` (SET name = value): for tests that need one (migrations from
    scratch, server processes). Kept between tests and emptied (its schema
    dropped) for the next: dropping a database makes PostgreSQL checkpoint,
    which takes seconds on a busy server."""
    server, base = postgres_url.rsplit("/", 1)
    key = "_".join(f"{k}_{v}" for k, v in sorted(settings.items())).lower()
    index = 0
    while (name := f"scratch_{base}_{re.sub(r'[^a-z0-9]', '', key)}_{index}") in _SCRATCH_IN_USE:
        index += 1
    _SCRATCH_IN_USE.add(name)

    async def prepare() -> None:
        await _create_database(f"{server}/{name}", **settings)
        scratch = await asyncpg.connect(f"{server}/{name}")
        try:
            await scratch.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        finally:
            await scratch.close()

    asyncio.run(prepare())
    try:
        yield f"{server}/{name}"
    finally:
        _SCRATCH_IN_USE.discard(name)


_SCRATCH_IN_USE: set[str] = set()


@pytest.fixture
def scratch_database(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of the test's own (scratch_postgres), for tools
    that replace the tables they load (the benchmark kit)."""
    with scratch_postgres(postgres_url) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(name))


# Past this many rows a table is truncated on PostgreSQL rather than deleted from.
_BULK = 1000


async def _empty_every_table(engine: AsyncEngine) -> None:
    """Every table empty, as the test before may have left them. One statement
    finds the tables holding rows (a test writes to a few of some twenty), and
    only those are emptied, children first. On PostgreSQL a TRUNCATE costs a
    tenth of a second whatever it empties (new files for every table and
    index), a DELETE of a test's few rows a millisecond: a table is
    truncated only when it holds many rows."""
    tables = [table.name for table in reversed(Base.metadata.sorted_tables)]
    counted = " UNION ALL ".join(
        f"SELECT '{table}', (SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT {_BULK + 1}) AS r)"  # noqa: S608
        for table in tables
    )
    async with engine.begin() as connection:
        held = {name: rows for name, rows in await connection.execute(text(counted)) if rows}
        bulky = [table for table in tables if held.get(table, 0) > _BULK]
        if bulky and engine.dialect.name == "postgresql":
            await connection.execute(text(f"TRUNCATE {', '.join(bulky)} CASCADE"))
            held = {name: rows for name, rows in held.items() if name not in bulky}
        for table in tables:
            if table in held:
                await connection.execute(text(f"DELETE FROM {table}"))  # noqa: S608


# One engine per test database for the session (test database URL: engine),
# which the tests' apps share: a new engine's first connections cost more
# than most tests' statements (PostgreSQL's handshake and SQLAlchemy's
# first-connect queries, every test, twice).
_ENGINES: dict[str, AsyncEngine] = {}
_DEFAULT_POOL = (
    Settings.model_fields["database_pool_size"].default,
    Settings.model_fields["database_pool_timeout"].default,
)


@pytest.fixture(scope="session")
async def _engines_disposed() -> AsyncIterator[None]:
    yield
    for engine in _ENGINES.values():
        await engine.dispose()
    _ENGINES.clear()


@pytest.fixture
async def engine(database_url: str, _engines_disposed: None) -> AsyncEngine:
    """The test database's engine, its tables empty."""
    if database_url not in _ENGINES:
        _ENGINES[database_url] = create_engine(database_url)
    engine = _ENGINES[database_url]
    try:
        await _empty_every_table(engine)
    except DBAPIError as error:
        # A test before closed the database's connections (tests/test_errors.py):
        # the pool, told so by the failure, opens new ones.
        if not error.connection_invalidated:
            raise
        await _empty_every_table(engine)
    return engine


@pytest.fixture
async def session(engine: AsyncEngine) -> AsyncIterator[AsyncSession]:
    """A session for arranging data; commit before calling the API."""
    async with create_sessionmaker(engine)() as session:
        yield session


@dataclass
class Api:
    """An ASGI client on an app built with the given settings. Every /v1
    response it gets must keep the app's OpenAPI document (tests/support/contract.py)."""

    client: httpx.AsyncClient
    settings: Settings
    contract: Contract

    async def request(
        self, method: str, path: str, secret: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        response = await self.client.request(method, path, headers=headers, **kwargs)
        if response.url.path.startswith("/v1/"):
            broken = self.contract.problems(method, response.url.path, response)
            assert not broken, "the response breaks the OpenAPI document:\n" + "\n".join(broken)
        return response

    async def get(self, path: str, secret: str | None = None, **kwargs: Any) -> httpx.Response:
        return await self.request("GET", path, secret, **kwargs)

    async def post(self, path: str, secret: str | None = None, **kwargs: Any) -> httpx.Response:
        return await self.request("POST", path, secret, **kwargs)

    async def patch(self, path: str, secret: str | None = None, **kwargs: Any) -> httpx.Response:
        return await self.request("PATCH", path, secret, **kwargs)

    async def delete(self, path: str, secret: str | None = None, **kwargs: Any) -> httpx.Response:
        return await self.request("DELETE", path, secret, **kwargs)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None)


@pytest.fixture(scope="session")
def contract() -> Contract:
    """The API's OpenAPI document, the same for every app of the suite (building
    it takes a fifth of a second)."""
    return Contract(create_app(Settings(database_url="sqlite://", redis_url=None)).openapi())


def app_on(engine: AsyncEngine, settings: Settings) -> FastAPI:
    """The app of `settings` on the test's engine when they name its database
    with the default pool, as most tests' do; else on an engine of its own."""
    url = settings.database_url.get_secret_value()
    pool = (settings.database_pool_size, settings.database_pool_timeout)
    shared = _ENGINES.get(url) is engine and pool == _DEFAULT_POOL
    return create_app(settings, engine if shared else None)


@pytest.fixture
async def api(engine: AsyncEngine, settings: Settings, contract: Contract) -> AsyncIterator[Api]:
    app = app_on(engine, settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield Api(client, settings, contract)
    await release(app)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    cwd = Path.cwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


@pytest.fixture
def whole_minute() -> None:
    """Start a rate-limit test well inside a clock minute.

    In-process counters (limits' memory storage) use clock-aligned windows; a
    burst that straddles a minute carries the previous minute's count
    pro-rated, so an exact countdown would be off by one there, by design.
    """
    seconds_into_minute = time.time() % 60
    if seconds_into_minute > 52:
        time.sleep(60.5 - seconds_into_minute)


@asynccontextmanager
async def apps_sharing(
    settings: Settings, count: int = 2
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Clients on `count` app instances built from the same settings: workers
    or machines sharing one database and one Redis."""
    apps = [create_app(settings) for _ in range(count)]
    clients = [
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        for app in apps
    ]
    try:
        yield clients
    finally:
        for client, app in zip(clients, apps, strict=True):
            await client.aclose()
            await release(app)
