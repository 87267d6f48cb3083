"""A form's password (or PIN), asked before its first page: checked on
the server, kept only as an argon2 hash, a right answer letting that
browser in for a while through a signed cookie that every page, post and
upload of the form checks; guesses limited per address and per form."""

import re
import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.form import service as form_service
from formsapi.kit.time import shift
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Your name"},
    {"type": "file", "key": "cv", "title": "Your CV"},
]
PIN = "2468"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, secret_key="p" * 40)


async def _form(api: Api, session: AsyncSession, password: str | None = PIN) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, title="Staff survey", blocks=BLOCKS)
    await session.commit()
    changed = await api.patch(f"/v1/forms/{form.id}", secret, json={"password": password})
    assert changed.status_code == 200
    return form.id, secret


async def _unlock(api: Api, form_id: str, password: str, query: str = "") -> httpx.Response:
    return await api.post(f"/f/{form_id}/unlock", data={"password": password, "_next": query})


async def _count(api: Api, form_id: str, secret: str) -> int:
    count: int = (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"]
    return count


async def test_the_password_is_write_only_and_kept_as_an_argon2_hash(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)

    detail = await api.get(f"/v1/forms/{form_id}", secret)
    [stored] = (await session.execute(text("SELECT password_hash FROM forms"))).all()

    assert detail.json()["passwordRequired"] is True
    assert PIN not in detail.text
    assert 'password"' not in detail.text.replace("passwordRequired", "")
    assert stored[0].startswith("$argon2id$")
    assert PIN not in stored[0]
    short = await api.patch(f"/v1/forms/{form_id}", secret, json={"password": "123"})
    assert short.status_code == 422


async def test_nothing_of_the_form_is_shown_or_taken_before_the_password(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)

    page = await api.get(f"/f/{form_id}")
    posted = await api.post(f"/f/{form_id}", data={"name": "Eve"})
    upload = await api.post(f"/f/{form_id}/files?question=cv&name=a.txt", content=b"hello")

    assert page.status_code == 200
    assert 'name="password"' in page.text
    assert "Your name" not in page.text
    assert page.headers["cache-control"] == "no-store"
    assert posted.status_code == 401
    assert "Your name" not in posted.text
    assert upload.status_code == 403
    assert upload.headers["content-type"] == "application/problem+json"
    assert await _count(api, form_id, secret) == 0


@pytest.mark.usefixtures("whole_minute")
async def test_the_right_password_lets_that_browser_in(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)

    asked = await api.get(f"/f/{form_id}?ref=newsletter")
    wrong = await _unlock(api, form_id, "1357", "ref=newsletter")
    right = await _unlock(api, form_id, PIN, "ref=newsletter")
    cookie = right.headers["set-cookie"]
    shown = await api.get(f"/f/{form_id}?ref=newsletter")
    sent = await api.post(f"/f/{form_id}", data={"name": "Ada"})

    assert 'name="_next" value="ref=newsletter"' in asked.text
    assert wrong.status_code == 401
    assert "not right" in wrong.text
    assert right.status_code == 303
    assert right.headers["location"] == f"/f/{form_id}?ref=newsletter"
    assert cookie.startswith("formsapi_unlocked=")
    assert f"Path=/f/{form_id}" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Max-Age=7200" in cookie
    assert shown.status_code == 200
    assert "Your name" in shown.text
    assert sent.status_code == 303
    assert await _count(api, form_id, secret) == 1


@pytest.mark.usefixtures("whole_minute")
async def test_guesses_are_limited_per_address(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _form(api, session)

    guesses = [await _unlock(api, form_id, f"{n:04d}") for n in range(5)]
    sixth = await _unlock(api, form_id, PIN)  # right, but too late

    assert [g.status_code for g in guesses] == [401] * 5
    assert sixth.status_code == 429
    assert 1 <= int(sixth.headers["retry-after"]) <= 60
    assert "set-cookie" not in sixth.headers
    assert (await api.get(f"/f/{form_id}")).status_code == 200
    assert "Your name" not in (await api.get(f"/f/{form_id}")).text


@pytest.mark.usefixtures("whole_minute")
async def test_guesses_from_many_addresses_are_limited_per_form(
    api: Api, session: AsyncSession, database_url: str
) -> None:
    form_id, _ = await _form(api, session)
    other_id, _ = await _form(api, session)
    behind_proxy = Settings(
        database_url=database_url,
        redis_url=None,
        secret_key="p" * 40,
        trusted_proxies=["127.0.0.1"],
    )

    async with apps_sharing(behind_proxy, count=1) as [client]:
        codes = [
            (
                await client.post(
                    f"/f/{form_id}/unlock",
                    data={"password": "0000"},
                    headers={"X-Forwarded-For": f"10.0.{n // 4}.{n % 4}"},  # 4 each
                )
            ).status_code
            for n in range(32)
        ]
        other = await client.post(
            f"/f/{other_id}/unlock",
            data={"password": PIN},
            headers={"X-Forwarded-For": "10.1.0.1"},
        )

    # No address spent its own five: the form's thirty a minute stopped them.
    assert codes[:30] == [401] * 30
    assert codes[30:] == [429, 429]
    assert other.status_code == 303  # another form's allowance is its own


async def test_a_cookie_is_worth_nothing_for_another_form_or_a_new_password(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    other_id, _ = await _form(api, session)
    right = await _unlock(api, form_id, PIN)
    value = right.cookies["formsapi_unlocked"]

    api.client.cookies.clear()

    async def shown(path: str, cookie: str) -> httpx.Response:
        return await api.get(path, headers={"Cookie": f"formsapi_unlocked={cookie}"})

    elsewhere = await shown(f"/f/{other_id}", value)
    forged = await shown(f"/f/{form_id}", "99999999999.abc")
    kept = await shown(f"/f/{form_id}", value)
    await api.patch(f"/v1/forms/{form_id}", secret, json={"password": "new password"})
    after_change = await shown(f"/f/{form_id}", value)

    assert 'name="password"' in elsewhere.text
    assert 'name="password"' in forged.text
    assert "Your name" in kept.text
    assert 'name="password"' in after_change.text


async def test_the_cookie_lapses_and_the_password_can_be_taken_away(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    await _unlock(api, form_id, PIN)

    with shift(timedelta(hours=2, minutes=1)):
        lapsed = await api.post(f"/f/{form_id}", data={"name": "Ada"})
    removed = await api.patch(f"/v1/forms/{form_id}", secret, json={"password": None})
    api.client.cookies.clear()
    opened = await api.get(f"/f/{form_id}")

    assert lapsed.status_code == 401
    assert removed.json()["passwordRequired"] is False
    assert "Your name" in opened.text


async def test_the_api_is_not_asked(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)

    posted = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada"}}
    )

    assert posted.status_code == 201


async def test_hostile_posts_to_the_password_page_get_clear_answers(
    api: Api, session: AsyncSession, database_url: str
) -> None:
    form_id, _ = await _form(api, session)
    path = f"/f/{form_id}/unlock"
    # Each from an address of its own: the allowance of guesses is not what is tested.
    behind_proxy = Settings(
        database_url=database_url,
        redis_url=None,
        secret_key="p" * 40,
        trusted_proxies=["127.0.0.1"],
    )
    async with apps_sharing(behind_proxy, count=1) as [client]:

        async def post(n: int, **kwargs: object) -> httpx.Response:
            headers = {"X-Forwarded-For": f"10.2.0.{n}"}
            return await client.post(path, headers=headers, **kwargs)  # type: ignore[arg-type]

        many_fields = await post(1, data={"password": "0000", "_next": "a=1&" * 500})
        huge = await post(2, data={"password": "x" * 100_000})
        as_file = await post(3, files={"password": ("pin.txt", PIN.encode())})
        elsewhere = await post(4, data={"password": PIN, "_next": "//evil.example/x"})
        bad_resume = await post(5, data={"password": PIN, "_resume": "../../admin"})
        missing = await client.post("/f/frm_nothing/unlock", data={"password": PIN})

    assert many_fields.status_code == 401
    assert 'name="_next" value=""' in many_fields.text
    assert huge.status_code == 401
    assert as_file.status_code == 401
    assert elsewhere.status_code == 303
    assert elsewhere.headers["location"].startswith(f"/f/{form_id}?")
    assert bad_resume.status_code == 303
    assert bad_resume.headers["location"] == f"/f/{form_id}"
    assert missing.status_code == 404


async def test_a_duplicate_keeps_the_password_and_the_rule(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)
    await api.patch(f"/v1/forms/{form_id}", secret, json={"oneResponse": {"by": "cookie"}})
    organization_id = (await session.execute(text("SELECT organization_id FROM forms"))).scalar()
    await session.rollback()

    copy = await form_service.duplicate(session, str(organization_id), form_id)
    shown = form_service.detail(copy)
    await session.commit()

    assert shown["passwordRequired"] is True
    assert shown["oneResponse"] == {"by": "cookie"}
    await api.patch(f"/v1/forms/{copy.id}", secret, json={"status": "published"})
    assert (await _unlock(api, copy.id, PIN)).status_code == 303  # the same password


@pytest.mark.usefixtures("whole_minute")
async def test_guesses_are_counted_across_processes_sharing_redis(
    api: Api, session: AsyncSession, database_url: str, redis_url: str
) -> None:
    form_id, _ = await _form(api, session)
    shared = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4()}",
        secret_key="p" * 40,
    )

    async with apps_sharing(shared) as (first, second):
        codes = [
            (
                await (first if n % 2 else second).post(
                    f"/f/{form_id}/unlock", data={"password": f"{n:04d}"}
                )
            ).status_code
            for n in range(6)
        ]

    assert codes == [401] * 5 + [429]


async def test_a_new_form_takes_its_password_and_rule_when_created(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    await session.commit()
    body = {"title": "Ballot", "blocks": BLOCKS, "password": PIN}

    created = await api.post(
        "/v1/forms", secret, json={**body, "oneResponse": {"by": "ip", "hours": 2}}
    )
    wrong_rule = await api.post(
        "/v1/forms", secret, json={**body, "oneResponse": {"by": "email", "question": "name"}}
    )
    odd = await api.post("/v1/forms", secret, json={**body, "oneResponse": {"by": "dna"}})

    assert created.status_code == 201
    assert created.json()["passwordRequired"] is True
    assert created.json()["oneResponse"] == {"by": "ip", "hours": 2}
    assert PIN not in created.text
    assert wrong_rule.status_code == 422
    assert wrong_rule.json()["errors"][0]["pointer"] == "/oneResponse/question"
    assert odd.status_code == 422


async def test_the_password_page_leads_back_to_an_invitation_or_a_resume_link(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    paged = [
        BLOCKS[0],
        {"type": "page_break"},
        {"type": "short_text", "key": "city", "title": "City"},
    ]
    await api.patch(
        f"/v1/forms/{form_id}",
        secret,
        json={"blocks": paged, "oneResponse": {"by": "invitation"}},
    )
    made = await api.post(f"/v1/forms/{form_id}/invitations", secret, json={"count": 1})
    token = made.json()["data"][0]["token"]

    asked = await api.get(f"/f/{form_id}?invite={token}")
    unlocked = await _unlock(api, form_id, PIN, f"invite={token}")
    shown = await api.get(unlocked.headers["location"])
    moved = await api.post(f"/f/{form_id}", data={"_page": "0", "name": "Ada", "_invite": token})
    resume = re.search(r'name="_resume" value="([^"]+)"', moved.text)
    assert resume is not None
    api.client.cookies.clear()  # another day, the cookie gone
    back = f"/f/{form_id}/resume/{resume[1]}?invite={token}"
    asked_again = await api.get(back)
    again = await api.post(
        f"/f/{form_id}/unlock",
        data={"password": PIN, "_next": f"invite={token}", "_resume": resume[1]},
    )

    assert asked.status_code == 200
    assert f'name="_next" value="invite={token}"' in asked.text
    assert asked.headers["cache-control"] == "no-store"
    assert unlocked.headers["location"] == f"/f/{form_id}?invite={token}"
    assert f'name="_invite" value="{token}"' in shown.text
    assert moved.status_code == 200
    assert 'name="password"' in asked_again.text
    assert again.headers["location"] == back
    resumed = await api.get(back)
    assert 'name="city"' in resumed.text
