"""The hosted page's own limits, apart from the API's: posts per client IP
and into one form per minute, exact across processes sharing one Redis,
answered 429 with Retry-After and counted as refusals."""

import uuid

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org
from tests.support.honeypot import honeypot_in

BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]


async def _form(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, title="Contact", blocks=BLOCKS)
    await session.commit()
    return form.id, secret


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 429
    assert response.headers["content-type"].startswith("text/html")
    assert 1 <= int(response.headers["retry-after"]) <= 60
    assert "Too many requests" in response.text


async def _refusals(api: Api | httpx.AsyncClient, form_id: str, secret: str) -> dict[str, int]:
    answer = await api.get(
        f"/v1/forms/{form_id}/refusals", headers={"Authorization": f"Bearer {secret}"}
    )
    return {count["reason"]: count["count"] for count in answer.json()["data"]}


async def test_the_form_s_limit_is_exact_across_two_processes_on_one_redis(
    engine: AsyncEngine, database_url: str, redis_url: str, session: AsyncSession
) -> None:
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4()}",
        public_posts_per_form=7,
        public_posts_per_ip=1000,
    )
    form_id, secret = await _form(session)
    async with apps_sharing(settings) as (first, second):
        answers = [
            await (first if i % 2 else second).post(f"/f/{form_id}", data={"name": f"P{i}"})
            for i in range(10)
        ]
        detail = await first.get(
            f"/v1/forms/{form_id}", headers={"Authorization": f"Bearer {secret}"}
        )
        await _refusals(first, form_id, secret)  # each process writes the counts it holds
        counted = await _refusals(second, form_id, secret)

    assert [a.status_code for a in answers] == [303] * 7 + [429] * 3
    for refused in answers[7:]:
        _refused(refused)
    assert detail.json()["responseCount"] == 7
    assert counted == {"rate-limited-form": 3}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, public_posts_per_ip=3)


@pytest.mark.usefixtures("whole_minute")
async def test_one_address_is_limited_in_every_form_and_its_uploads(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)

    answers = [await api.post(f"/f/{form_id}", data={"name": "Ada"}) for _ in range(3)]
    over = await api.post(f"/f/{form_id}", data={"name": "Ada"})
    upload = await api.post(f"/f/{form_id}/files?question=name&name=a.txt", content=b"hello")

    assert [a.status_code for a in answers] == [303] * 3
    _refused(over)
    # The page's script reads an upload's refusal as a problem document.
    assert upload.status_code == 429
    assert upload.headers["content-type"] == "application/problem+json"
    assert int(upload.headers["retry-after"]) >= 1
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 3
    assert await _refusals(api, form_id, secret) == {"rate-limited-ip": 2}


@pytest.mark.usefixtures("whole_minute")
async def test_posts_filling_the_honeypot_count_against_the_address_as_any_other(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    honeypot = honeypot_in((await api.get(f"/f/{form_id}")).text)

    bots = [await api.post(f"/f/{form_id}", data={"name": "Bot", honeypot: "x"}) for _ in range(5)]
    person = await api.post(f"/f/{form_id}", data={"name": "Ada"})

    assert [bot.status_code for bot in bots] == [303] * 3 + [429] * 2
    _refused(person)  # the same address: its allowance went to the bot
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    assert await _refusals(api, form_id, secret) == {"honeypot": 3, "rate-limited-ip": 3}


async def test_the_api_s_limits_are_apart_from_the_page_s(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    for _ in range(4):
        await api.post(f"/f/{form_id}", data={"name": "Ada"})

    # The page's allowance spent, the same address still reads the API.
    assert (await api.get(f"/v1/forms/{form_id}", secret)).status_code == 200
    assert (await api.get(f"/f/{form_id}")).status_code == 200
