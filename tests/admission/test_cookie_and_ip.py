"""One response per browser (a signed cookie) or per IP address (a keyed
hash kept for the window, in Redis when configured, else in the
database), on the hosted page; the API's own posts are not bound."""

import asyncio
import socket
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.admission.service import purge_lapsed
from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.kit.time import shift
from formsapi.services import services_of
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]
SECRET_KEY = "c" * 40


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        secret_key=SECRET_KEY,
        trusted_proxies=["127.0.0.1"],
    )


async def _form(api: Api, session: AsyncSession, rule: dict[str, object]) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, title="Lunch poll", blocks=BLOCKS)
    await session.commit()
    changed = await api.patch(f"/v1/forms/{form.id}", secret, json={"oneResponse": rule})
    assert changed.status_code == 200, changed.text
    return form.id, secret


async def _count(api: Api, form_id: str, secret: str) -> int:
    count: int = (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"]
    return count


def _from(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_a_browser_that_answered_is_told_so(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session, {"by": "cookie"})
    other_id, _ = await _form(api, session, {"by": "cookie"})

    sent = await api.post(f"/f/{form_id}", data={"name": "Ada"})
    cookie = sent.headers["set-cookie"]
    again = await api.get(f"/f/{form_id}")
    posted_again = await api.post(f"/f/{form_id}", data={"name": "Ada"})
    other = await api.get(f"/f/{other_id}")

    assert sent.status_code == 303
    assert cookie.startswith("formsapi_answered=")
    assert f"Path=/f/{form_id}" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert again.status_code == 409
    assert "answered this form already" in again.text
    assert posted_again.status_code == 409
    assert other.status_code == 200  # its cookie is this form's only
    assert await _count(api, form_id, secret) == 1


async def test_a_cleared_or_forged_cookie_gets_around_it_or_nothing(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session, {"by": "cookie"})
    await api.post(f"/f/{form_id}", data={"name": "Ada"})

    api.client.cookies.clear()  # a private window: what the README says it cannot stop
    fresh = await api.get(f"/f/{form_id}")
    forged = await api.get(f"/f/{form_id}", headers={"Cookie": "formsapi_answered=1.abc"})
    api_post = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada"}}
    )

    assert fresh.status_code == 200
    assert forged.status_code == 200
    assert api_post.status_code == 201


async def test_an_address_answers_once_a_window(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session, {"by": "ip", "hours": 6})

    sent = await api.post(f"/f/{form_id}", data={"name": "Ada"}, headers=_from("10.0.0.1"))
    shown = await api.get(f"/f/{form_id}", headers=_from("10.0.0.1"))
    again = await api.post(f"/f/{form_id}", data={"name": "Bob"}, headers=_from("10.0.0.1"))
    neighbour = await api.post(f"/f/{form_id}", data={"name": "Cy"}, headers=_from("10.0.0.2"))
    with shift(timedelta(hours=6, minutes=1)):
        later = await api.post(f"/f/{form_id}", data={"name": "Ada"}, headers=_from("10.0.0.1"))

    assert sent.status_code == 303
    assert shown.status_code == 409
    assert "every 6 hours" in shown.text
    assert again.status_code == 409
    assert neighbour.status_code == 303
    assert later.status_code == 303
    assert await _count(api, form_id, secret) == 3
    stored = (await session.execute(text("SELECT kind, digest FROM respondent_marks"))).all()
    assert {kind for kind, _ in stored} == {"ip"}
    assert all(b"10.0.0" not in bytes(digest) for _, digest in stored)
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["oneResponse"] == {
        "by": "ip",
        "hours": 6,
    }


async def test_answers_not_taken_give_the_address_back(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session, {"by": "ip"})

    invalid = await api.post(f"/f/{form_id}", data={"name": ""}, headers=_from("10.0.0.1"))
    sent = await api.post(f"/f/{form_id}", data={"name": "Ada"}, headers=_from("10.0.0.1"))

    assert invalid.status_code == 422
    assert sent.status_code == 303
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["oneResponse"]["hours"] == 24


async def test_one_address_racing_itself_is_taken_once(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session, {"by": "ip"})

    answers = await asyncio.gather(
        *(
            api.post(f"/f/{form_id}", data={"name": f"P{i}"}, headers=_from("10.0.0.9"))
            for i in range(10)
        )
    )

    assert sorted(a.status_code for a in answers) == [303] + [409] * 9
    assert await _count(api, form_id, secret) == 1


async def test_processes_sharing_redis_share_the_addresses(
    database_url: str, redis_url: str, session: AsyncSession
) -> None:
    prefix = f"test-{uuid.uuid4()}"
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=prefix,
        secret_key=SECRET_KEY,
        trusted_proxies=["127.0.0.1"],
    )
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, title="Lunch poll", blocks=BLOCKS)
    await session.commit()
    auth = {"Authorization": f"Bearer {secret}"}

    async with apps_sharing(settings) as (first, second):
        await first.patch(
            f"/v1/forms/{form.id}", headers=auth, json={"oneResponse": {"by": "ip", "hours": 1}}
        )
        racing = await asyncio.gather(
            *(
                (first if i % 2 else second).post(
                    f"/f/{form.id}", data={"name": f"P{i}"}, headers=_from("10.0.0.7")
                )
                for i in range(8)
            )
        )
        told = await second.get(f"/f/{form.id}", headers=_from("10.0.0.7"))
        count = (await first.get(f"/v1/forms/{form.id}", headers=auth)).json()["responseCount"]
        redis = services_of(first._transport.app).redis  # type: ignore[attr-defined]
        assert redis is not None
        [keys] = await redis.execute(("KEYS", f"{prefix}:once-ip:*"))
        [ttl] = await redis.execute(("PTTL", keys[0]))

    assert sorted(a.status_code for a in racing) == [303] + [409] * 7
    assert told.status_code == 409
    assert count == 1
    assert len(keys) == 1
    assert b"10.0.0.7" not in keys[0]
    assert 0 < ttl <= 3_600_000
    # Nothing of it in the database: Redis keeps the window.
    assert (await session.execute(text("SELECT count(*) FROM respondent_marks"))).scalar() == 0


async def test_the_sweep_forgets_addresses_once_their_window_passed(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, _ = await _form(api, session, {"by": "ip", "hours": 1})
    await api.post(f"/f/{form_id}", data={"name": "Ada"}, headers=_from("10.0.0.1"))
    sessionmaker = create_sessionmaker(engine)

    before = await purge_lapsed(sessionmaker)
    with shift(timedelta(hours=1, seconds=1)):
        after = await purge_lapsed(sessionmaker)

    assert (before, after) == (0, 1)
    assert (await session.execute(text("SELECT count(*) FROM respondent_marks"))).scalar() == 0


async def test_without_its_redis_an_address_is_kept_in_the_database(
    database_url: str, session: AsyncSession
) -> None:
    with socket.socket() as sock:  # a port nothing listens on: Redis is down
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        database_url=database_url,
        redis_url=f"redis://127.0.0.1:{port}/0",
        secret_key=SECRET_KEY,
        trusted_proxies=["127.0.0.1"],
    )
    org = await create_org(session)
    form = await create_form(session, org, title="Lunch poll", blocks=BLOCKS)
    form.one_response_by, form.one_response_hours = "ip", 1
    await session.commit()

    async with apps_sharing(settings, count=1) as [client]:
        first = await client.post(f"/f/{form.id}", data={"name": "Ada"}, headers=_from("10.0.0.3"))
        again = await client.post(f"/f/{form.id}", data={"name": "Ada"}, headers=_from("10.0.0.3"))

    assert (first.status_code, again.status_code) == (303, 409)
    assert (await session.execute(text("SELECT count(*) FROM respondent_marks"))).scalar() == 1
