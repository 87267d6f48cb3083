"""A client that sends its headers and part of a body, then waits, holds only
its own socket: never a transaction, SQLite's write lock or a pooled
PostgreSQL connection. Bodies not in by FORMSAPI_BODY_TIMEOUT answer 408.
Requests without the right key are refused before their body is read."""

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_user
from tests.support.stalled import StalledBody, started
from tests.web.conftest import PASSWORD, Browser, add_member, csrf_field

GOOD = {"name": "Ada", "colors": "red"}


@pytest.fixture
def body_timeout() -> float:
    return 30.0


@pytest.fixture
def settings(database_url: str, body_timeout: float) -> Settings:
    # Two connections and a one-second wait: a held pool or lock shows as 503.
    return Settings(
        database_url=database_url,
        redis_url=None,
        database_pool_size=2,
        database_pool_timeout=1,
        body_timeout=body_timeout,
        rate_limit_standard=100_000,
    )


Route = Callable[[Api, AsyncSession], Awaitable[tuple[str, StalledBody, dict[str, str], int]]]


async def _api_post(
    api: Api, session: AsyncSession
) -> tuple[str, StalledBody, dict[str, str], int]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=["submissions:write"])
    form = await create_form(session, org)
    await session.commit()
    body = StalledBody(b'{"answers": {"name": "Ada", ', b'"colors": "red"}}')
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    return f"/v1/forms/{form.id}/submissions", body, headers, 201


async def _hosted_post(
    api: Api, session: AsyncSession
) -> tuple[str, StalledBody, dict[str, str], int]:
    form = await create_form(session, await create_org(session))
    await session.commit()
    body = StalledBody(b"name=Ada&", b"colors=red")
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return f"/f/{form.id}", body, headers, 303


async def _sign_in(api: Api, session: AsyncSession) -> tuple[str, StalledBody, dict[str, str], int]:
    user = await create_user(session)
    await session.commit()
    token = csrf_field((await api.client.get("/sign-in")).text)
    fields = urlencode({"csrf_token": token, "email": user.email, "password": PASSWORD})
    body = StalledBody(fields.encode(), b"&next=%2Fforms")
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return "/sign-in", body, headers, 303


async def _member_removal(
    api: Api, session: AsyncSession
) -> tuple[str, StalledBody, dict[str, str], int]:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await Browser(api.client).sign_in(owner.email)
    body = StalledBody(f"csrf_token={browser.csrf}".encode(), b"&confirm=1")
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return f"/settings/members/{viewer.id}/remove", body, headers, 303


ROUTES = {
    "API write": _api_post,
    "hosted form": _hosted_post,
    "sign-in": _sign_in,
    "member removal": _member_removal,
}


@pytest.mark.parametrize("route", ROUTES.values(), ids=ROUTES.keys())
async def test_stalled_bodies_hold_no_database_while_they_wait(
    api: Api, session: AsyncSession, route: Route
) -> None:
    path, body, headers, status = await route(api, session)
    others = [StalledBody(body.first, body.rest) for _ in range(2)]
    org = await create_org(session)
    _, writer = await create_key(session, org, scopes=["submissions:write"])
    form = await create_form(session, org)
    await session.commit()

    stalled = [
        asyncio.create_task(api.client.post(path, content=b, headers=headers))
        for b in (body, *others)
    ]
    for each in (body, *others):
        await started(each)
    # Three clients wait mid-body; the database serves everyone else.
    write = await api.post(f"/v1/forms/{form.id}/submissions", writer, json={"answers": GOOD})
    ready = await api.get("/readyz")
    body.released.set()
    for other in others:
        other.released.set()
    answers = await asyncio.gather(*stalled)

    assert write.status_code == 201, write.text
    assert ready.status_code == 200
    assert ready.json()["components"]["database"] == "ok"
    assert answers[0].status_code == status, answers[0].text


@pytest.mark.parametrize("body_timeout", [0.5])
@pytest.mark.parametrize("route", ROUTES.values(), ids=ROUTES.keys())
async def test_a_body_that_does_not_arrive_in_time_answers_408(
    api: Api, session: AsyncSession, route: Route
) -> None:
    path, body, headers, _ = await route(api, session)

    response = await asyncio.wait_for(
        api.client.post(path, content=body, headers=headers), timeout=30
    )

    assert response.status_code == 408
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/request-timeout"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_readiness_needs_no_write_lock_and_a_write_without_it_answers_503_busy(
    api: Api, session: AsyncSession, settings: Settings
) -> None:
    org = await create_org(session)
    _, writer = await create_key(session, org, scopes=["submissions:write"])
    form = await create_form(session, org)
    await session.commit()
    path = settings.database_url.get_secret_value().removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's writer, holding the lock
    try:
        ready = await api.get("/readyz")
        write = await api.post(f"/v1/forms/{form.id}/submissions", writer, json={"answers": GOOD})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    after = await api.post(f"/v1/forms/{form.id}/submissions", writer, json={"answers": GOOD})

    assert ready.status_code == 200
    assert write.status_code == 503
    assert write.json()["type"] == "/problems/busy"
    assert write.headers["retry-after"] == "1"
    assert after.status_code == 201
