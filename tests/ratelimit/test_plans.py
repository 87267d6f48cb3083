"""The plan limits at their default values: 120 and 1,200 requests a minute."""

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Plan
from tests.conftest import Api
from tests.ratelimit.test_ratelimit import _secret, assert_limited

pytestmark = pytest.mark.usefixtures("whole_minute")


async def test_121st_request_within_a_minute_is_429(api: Api, session: AsyncSession) -> None:
    secret = await _secret(session)

    remaining = []
    for _ in range(120):
        response = await api.get("/v1/forms", secret)
        assert response.status_code == 200
        assert response.headers["ratelimit-limit"] == "120"
        remaining.append(int(response.headers["ratelimit-remaining"]))
        assert 1 <= int(response.headers["ratelimit-reset"]) <= 60
    response = await api.get("/v1/forms", secret)

    assert remaining == list(range(119, -1, -1))
    assert_limited(response, 120)


async def test_pro_plan_allows_1200(api: Api, session: AsyncSession) -> None:
    secret = await _secret(session, Plan.pro)

    for _ in range(121):
        response = await api.get("/v1/forms", secret)
        assert response.status_code == 200
    assert response.headers["ratelimit-limit"] == "1200"
    assert response.headers["ratelimit-remaining"] == str(1200 - 121)
