"""Fixtures: real SQLite and PostgreSQL databases, a real Redis, an ASGI client.

Every API test runs once per engine. A service that is not reachable skips its
tests locally and fails them when CI is set.
"""

import asyncio
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from pwdlib.hashers.argon2 import Argon2Hasher
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi import tenancy
from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db import create_engine, create_sessionmaker, migrate
from formsapi.models import Base
from formsapi.user import service as user_service
from tests.contract import Contract

IN_CI = bool(os.environ.get("CI"))

# Argon2id with the library's defaults costs ~50 ms a hash: tests hash cheaply.
# Server processes the tests start keep the production parameters.
user_service.use_hasher(Argon2Hasher(time_cost=1, memory_cost=64, parallelism=1))
POSTGRES_URL = os.environ.get(
    "FORMSAPI_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("FORMSAPI_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def service_unavailable(reason: str) -> None:
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


def _check_tenant_scope(
    connection: object, statement: object, multiparams: object, params: object, options: Any
) -> None:
    tables = tenancy.violations(statement, dict(options))
    if tables:
        try:
            text = str(statement)
        except Exception:  # a construct only a dialect can render
            text = repr(statement)
        _UNSCOPED.append(f"{', '.join(tables)} not limited to an organization in: {text}")


@pytest.fixture(scope="session", autouse=True)
def _tenant_scope_checked() -> Iterator[None]:
    event.listen(Engine, "before_execute", _check_tenant_scope)
    yield
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
def postgres_url() -> str:
    if not reachable(POSTGRES_URL):
        service_unavailable(f"PostgreSQL is not reachable at {POSTGRES_URL}")
    # Start from an empty schema: earlier runs or other branches may have left tables.
    engine = create_engine(POSTGRES_URL)
    asyncio.run(_reset(engine))
    asyncio.run(engine.dispose())
    migrate(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not reachable(REDIS_URL):
        service_unavailable(f"Redis is not reachable at {REDIS_URL}")
    return REDIS_URL


@contextmanager
def scratch_postgres(postgres_url: str, **settings: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the test server, with database-level
    `settings` (SET name = value), dropped afterwards: for tests that need a
    database of their own (migrations from scratch, server processes)."""
    server = postgres_url.rsplit("/", 1)[0]
    name = f"scratch_{uuid.uuid4().hex[:12]}"

    async def admin(*statements: str) -> None:
        connection = await asyncpg.connect(f"{server}/postgres")
        for statement in statements:
            await connection.execute(statement)
        await connection.close()

    asyncio.run(
        admin(
            f'CREATE DATABASE "{name}"',
            *(
                f"ALTER DATABASE \"{name}\" SET {key} = '{value}'"
                for key, value in settings.items()
            ),
        )
    )
    try:
        yield f"{server}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    tables = [table.name for table in reversed(Base.metadata.sorted_tables)]
    async with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            await connection.execute(text(f"TRUNCATE {', '.join(tables)} CASCADE"))
        else:
            for table in tables:
                await connection.execute(text(f"DELETE FROM {table}"))  # noqa: S608
    yield engine
    await engine.dispose()


@pytest.fixture
async def session(engine: AsyncEngine) -> AsyncIterator[AsyncSession]:
    """A session for arranging data; commit before calling the API."""
    async with create_sessionmaker(engine)() as session:
        yield session


@dataclass
class Api:
    """An ASGI client on an app built with the given settings. Every /v1
    response it gets must keep the app's OpenAPI document (tests/contract.py)."""

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


@pytest.fixture
async def api(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Api]:
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield Api(client, settings, Contract(app.openapi()))
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
