"""Key lookups are cached per worker, and the auth epoch in Redis makes a
revocation through any process refused by every other one at once."""

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.api_key.cache import PrincipalCache
from formsapi.api_key.epoch import AuthEpoch
from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker, session_scope
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.kit.time import utcnow
from formsapi.models import APIKey
from formsapi.tenancy import unscoped
from tests.conftest import apps_sharing
from tests.support.factories import create_key, create_org

Clients = tuple[httpx.AsyncClient, httpx.AsyncClient]


@pytest.fixture
def shared_settings(database_url: str, redis_url: str) -> Settings:
    return Settings(
        database_url=database_url, redis_url=redis_url, redis_prefix=f"test-{uuid.uuid4()}"
    )


@pytest.fixture
async def two_workers(engine: AsyncEngine, shared_settings: Settings) -> AsyncIterator[Clients]:
    async with apps_sharing(shared_settings) as (first, second):
        yield first, second


async def _key(session: AsyncSession) -> tuple[str, dict[str, str]]:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()
    return key_id, {"Authorization": f"Bearer {secret}"}


async def _cached_then_revoked_behind_the_back(
    client: httpx.AsyncClient, session: AsyncSession
) -> dict[str, str]:
    """A key the worker has cached, then revoked in SQL without an epoch bump."""
    key_id, auth = await _key(session)
    assert (await client.get("/v1/forms", headers=auth)).status_code == 200
    revoke = update(APIKey).where(APIKey.id == key_id).values(revoked_at=utcnow())
    await session.execute(unscoped(revoke, "a revocation behind the service's back"))
    await session.commit()
    return auth


async def test_revocation_reaches_every_worker_at_once(
    two_workers: Clients,
    session: AsyncSession,
    engine: AsyncEngine,
    shared_settings: Settings,
) -> None:
    first, second = two_workers
    key_id, auth = await _key(session)
    for client in (first, second):  # both now hold the key in their caches
        assert (await client.get("/v1/forms", headers=auth)).status_code == 200

    # Revoke from a third process's unit of work, as the CLI does.
    assert shared_settings.redis_url is not None
    pipe = RedisPipe(shared_settings.redis_url.get_secret_value())
    epoch = AuthEpoch(pipe, shared_settings.redis_prefix)
    async with session_scope(create_sessionmaker(engine), epoch.after_commit) as other:
        await api_key_service.revoke(other, key_id)
    await pipe.close()

    for client in (first, second):
        response = await client.get("/v1/forms", headers=auth)
        assert response.status_code == 401
        assert "revoked" in response.json()["detail"]


async def test_lookups_are_served_from_the_cache_between_epochs(
    two_workers: Clients, session: AsyncSession
) -> None:
    # A revocation written behind the service's back (no epoch bump) is not
    # seen: the cache is really in use, and the epoch is what invalidates it.
    first, _ = two_workers
    auth = await _cached_then_revoked_behind_the_back(first, session)

    assert (await first.get("/v1/forms", headers=auth)).status_code == 200


async def test_a_lost_epoch_invalidates_every_cache(
    two_workers: Clients, session: AsyncSession, shared_settings: Settings
) -> None:
    # Redis restarted without persistence, or evicted the token: a fresh one is
    # drawn, and no entry cached under the old one is trusted again.
    first, _ = two_workers
    auth = await _cached_then_revoked_behind_the_back(first, session)

    assert shared_settings.redis_url is not None
    redis = Redis.from_url(shared_settings.redis_url.get_secret_value())
    await redis.delete(f"{shared_settings.redis_prefix}:auth-epoch")
    await redis.aclose()

    assert (await first.get("/v1/forms", headers=auth)).status_code == 401


async def test_cached_lookups_expire_even_if_the_epoch_never_moves(
    two_workers: Clients, session: AsyncSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = two_workers
    auth = await _cached_then_revoked_behind_the_back(first, session)

    monkeypatch.setattr(PrincipalCache, "TTL", 0.0)

    assert (await first.get("/v1/forms", headers=auth)).status_code == 401


@pytest.mark.usefixtures("whole_minute")
async def test_with_redis_down_the_api_answers_and_revocation_stays_exact(
    engine: AsyncEngine, database_url: str, session: AsyncSession
) -> None:
    # Nothing listens on port 1: every Redis call fails at once.
    settings = Settings(
        database_url=database_url, redis_url="redis://127.0.0.1:1/0", rate_limit_standard=3
    )
    app = create_app(settings)
    key_id, auth = await _key(session)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as client:
        served = await client.get("/v1/forms", headers=auth)
        ready = await client.get("/readyz")
        await api_key_service.revoke(session, key_id)  # no epoch to publish to
        await session.commit()
        revoked = await client.get("/v1/forms", headers=auth)
        statuses = [(await client.get("/v1/forms")).status_code for _ in range(2)]
    await release(app)

    assert served.status_code == 200
    assert served.headers["ratelimit-limit"] == "3"  # limited per process meanwhile
    assert ready.status_code == 200
    assert ready.json()["components"] == {"database": "ok", "redis": "unreachable"}
    assert revoked.status_code == 401
    assert statuses == [401, 429]  # the fourth request from this address
