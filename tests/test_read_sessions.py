"""Reading never takes the write lock: every GET of the API reads on the
read session, and on SQLite answers while another writer holds the
database's one write lock (a GET on the write session waited 2 s for it,
then answered 503)."""

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import iter_route_contexts
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.app import create_app
from formsapi.config import Settings
from formsapi.dependencies import GuardedRoute, get_read_session, get_session
from formsapi.models import Organization
from tests.conftest import Api
from tests.support.factories import EVERY_SCOPE, create_key, create_org

PLAUSIBLE = "01jd2x8k4m5n6p7q8r9s0t1v2w"  # an id's shape: found nowhere, answered 404


async def test_every_get_of_the_api_answers_while_another_writer_holds_sqlites_lock(
    api: Api, session: AsyncSession
) -> None:
    if session.get_bind().dialect.name != "sqlite":
        pytest.skip("PostgreSQL's readers never wait for a writer: nothing to hold")
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=EVERY_SCOPE)
    await session.commit()
    document = (await api.get("/v1/openapi.json")).json()
    paths = [
        re.sub(r"\{(\w+?)Id\}", lambda m: f"{m[1][:3]}_{PLAUSIBLE}", path)
        for path, operations in document["paths"].items()
        if "get" in operations
    ]
    assert any("webhook-endpoints" in path for path in paths), paths

    # A write not committed: SQLite's one write lock, held meanwhile.
    await session.execute(update(Organization).where(Organization.id == org.id).values(name="x"))
    answered = {}
    try:
        for path in paths:
            answered[path] = (await api.get(path, secret)).status_code
    finally:
        await session.rollback()

    # The lock is held until every GET has answered: one that waited for it
    # answered 503 (however fast the machine), never a page.
    refused = {path: status for path, status in answered.items() if status >= 500}
    assert refused == {}
    assert answered["/v1/webhook-endpoints"] == 200


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any] | None]:
    """What the dependant depends on, however deep."""
    for dependency in dependant.dependencies:
        yield dependency.call
        yield from _calls(dependency)


def test_every_get_of_the_api_takes_the_read_session_and_never_the_write_one() -> None:
    # What the test above cannot see: a GET that took the write session in a
    # way SQLite forgives (no statement while the lock was held), or on
    # PostgreSQL, whose readers never wait.
    app = create_app(Settings(database_url="sqlite://", redis_url=None))
    gets = {
        route.path_format: set(_calls(route.dependant))
        for route in iter_route_contexts(app.routes)
        if isinstance(route.original_route, GuardedRoute) and "GET" in (route.methods or ())
    }
    # Outside /v1 only a signed link's download, which takes no session at all.
    documented = {
        path
        for path, operations in app.openapi()["paths"].items()
        if "get" in operations and path.startswith("/v1/")
    }

    assert set(gets) == documented  # every GET of the API is looked at here
    assert {path for path, calls in gets.items() if get_read_session not in calls} == set()
    assert {path for path, calls in gets.items() if get_session in calls} == set()
