import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.models import Plan
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_key, create_org

pytestmark = pytest.mark.usefixtures("whole_minute")


async def _secret(session: AsyncSession, plan: str = Plan.standard) -> str:
    org = await create_org(session, plan)
    _, secret = await create_key(session, org)
    await session.commit()
    return secret


def assert_limited(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 429
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 429
    retry_after = response.headers["retry-after"]
    assert retry_after.isdigit()
    assert 1 <= int(retry_after) <= 60
    assert response.headers["ratelimit-limit"] == str(limit)
    assert response.headers["ratelimit-remaining"] == "0"


@pytest.fixture
def settings(database_url: str) -> Settings:
    # Small limits keep the remaining tests fast; the numbers are settings.
    return Settings(
        database_url=database_url,
        rate_limit_standard=3,
        rate_limit_pro=6,
        trusted_proxies=["10.0.0.0/8", "127.0.0.1"],
    )


async def test_requests_without_a_valid_key_count_at_the_standard_rate(api: Api) -> None:
    for _ in range(3):
        response = await api.get("/v1/forms", "fapi_wrong")
        assert response.status_code == 401
        assert response.headers["ratelimit-limit"] == "3"
    assert_limited(await api.get("/v1/forms", "fapi_wrong"), 3)
    assert_limited(await api.get("/v1/forms"), 3)


async def test_every_response_carries_the_headers(api: Api, session: AsyncSession) -> None:
    secret = await _secret(session)
    for path in ("/v1/forms", "/v1/forms/frm_missing", "/v1/forms?limit=0"):
        response = await api.get(path, secret)
        assert response.status_code in (200, 404, 400)
        assert {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} <= set(
            response.headers
        )


async def test_probes_are_not_limited(api: Api) -> None:
    for _ in range(4):
        await api.get("/v1/forms")
    assert (await api.get("/healthz")).status_code == 200
    assert (await api.get("/readyz")).status_code == 200


async def test_forwarded_client_is_honored_only_from_trusted_proxies(
    api: Api, session: AsyncSession
) -> None:
    secret = await _secret(session)
    # The test client connects from 127.0.0.1, a trusted proxy here.
    for _ in range(3):
        await api.get("/v1/forms", secret, headers={"X-Forwarded-For": "203.0.113.7"})
    limited = await api.get("/v1/forms", secret, headers={"X-Forwarded-For": "203.0.113.7"})
    other = await api.get("/v1/forms", secret, headers={"X-Forwarded-For": "203.0.113.8"})
    # A client cannot forge its way out by prepending addresses: the rightmost
    # untrusted hop is the client.
    forged = await api.get(
        "/v1/forms", secret, headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.7"}
    )
    via_internal = await api.get(
        "/v1/forms", secret, headers={"X-Forwarded-For": "203.0.113.7, 10.1.2.3"}
    )

    assert limited.status_code == 429
    assert other.status_code == 200
    assert forged.status_code == 429
    assert via_internal.status_code == 429


async def test_forwarded_header_is_ignored_from_untrusted_peers(
    engine: AsyncEngine, database_url: str, session: AsyncSession
) -> None:
    secret = await _secret(session)
    app = create_app(Settings(database_url=database_url, rate_limit_standard=3))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        statuses = [
            (
                await client.get(
                    "/v1/forms",
                    headers={
                        "Authorization": f"Bearer {secret}",
                        "X-Forwarded-For": f"203.0.113.{i}",
                    },
                )
            ).status_code
            for i in range(4)
        ]
    await release(app)

    assert statuses == [200, 200, 200, 429]


@pytest.fixture
async def two_apps_on_one_redis(
    engine: AsyncEngine, database_url: str, redis_url: str
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4()}",
        rate_limit_standard=5,
    )
    async with apps_sharing(settings) as (first, second):
        yield first, second


async def test_redis_shares_one_limit_between_app_instances(
    two_apps_on_one_redis: tuple[httpx.AsyncClient, httpx.AsyncClient], session: AsyncSession
) -> None:
    first, second = two_apps_on_one_redis
    secret = await _secret(session)
    headers = {"Authorization": f"Bearer {secret}"}

    statuses = [
        (await (first if i % 2 else second).get("/v1/forms", headers=headers)).status_code
        for i in range(5)
    ]
    over = await first.get("/v1/forms", headers=headers)

    assert statuses == [200] * 5
    assert_limited(over, 5)
