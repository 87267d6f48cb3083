"""The key is checked, the request counted against the limit and the scope
checked before anything reads or validates the body: an anonymous or
under-scoped caller costs no parsing and learns nothing from it."""

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.support.stalled import StalledBody

MALFORMED = {"content": b'{"title": ', "headers": {"Content-Type": "application/json"}}
NOT_JSON = {"content": b"title=x", "headers": {"Content-Type": "text/plain"}}
INVALID = {"json": {"title": ""}}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=5)


@pytest.mark.usefixtures("whole_minute")
async def test_without_a_key_any_body_is_401_and_counts_toward_the_limit(api: Api) -> None:
    answers = [await api.post("/v1/forms", **body) for body in (MALFORMED, NOT_JSON, INVALID) * 2]

    assert [a.status_code for a in answers] == [401] * 5 + [429]
    assert answers[-1].headers["retry-after"]


@pytest.mark.parametrize(
    "body", [MALFORMED, NOT_JSON, INVALID], ids=["malformed", "text", "invalid"]
)
async def test_a_read_only_key_meets_403_whatever_the_body(
    api: Api, session: AsyncSession, body: dict[str, object]
) -> None:
    org = await create_org(session)
    _, reader = await create_key(session, org)  # read scopes only
    form = await create_form(session, org)
    await session.commit()

    answers = [
        await api.post("/v1/forms", reader, **body),
        await api.patch(f"/v1/forms/{form.id}", reader, **body),
        await api.post(f"/v1/forms/{form.id}/submissions", reader, **body),
    ]

    assert [a.status_code for a in answers] == [403, 403, 403]
    assert [a.json()["requiredScope"] for a in answers] == [
        "forms:write",
        "forms:write",
        "submissions:write",
    ]


async def test_a_refused_caller_is_answered_without_its_body_being_read(api: Api) -> None:
    body = StalledBody(b'{"title": "never finished')

    response = await asyncio.wait_for(
        api.post("/v1/forms", content=body, headers={"Content-Type": "application/json"}),
        timeout=30,
    )

    assert response.status_code == 401
    assert body.sent == 0
