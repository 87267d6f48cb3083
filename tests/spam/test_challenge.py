"""A form's proof-of-work challenge (ALTCHA): the page asks for it, the
server makes and checks it, and a solution is good for one post of that
form, for a few minutes. Solved here by the altcha library's own solver, as
the browser's widget does (tests/e2e has Chromium solve it)."""

import base64
import json
import uuid
from datetime import timedelta
from typing import Any

import altcha
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.kit.time import shift
from formsapi.spam.challenge import purge_spent
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org
from tests.support.settled import events_settled

BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]
SECRET_KEY = "k" * 40


@pytest.fixture
def settings(database_url: str) -> Settings:
    # A cheap challenge: the test solves several in Python.
    return Settings(
        database_url=database_url, redis_url=None, challenge_cost=500, secret_key=SECRET_KEY
    )


async def _form(session: AsyncSession, *, challenge: bool = True) -> tuple[str, str]:
    org = await create_org(session)
    scopes = ["forms:read", "forms:write", "events:read"]
    _, secret = await create_key(session, org, scopes=scopes)
    form = await create_form(session, org, title="Contact", blocks=BLOCKS)
    form.challenge = challenge
    await session.commit()
    return form.id, secret


async def _solution(client: Api | httpx.AsyncClient, form_id: str) -> str:
    """What the widget posts: the challenge fetched from the page's address,
    and the counter found."""
    fetched = await client.get(f"/f/{form_id}/challenge")
    assert fetched.status_code == 200
    assert fetched.headers["cache-control"] == "no-store"
    challenge = altcha.Challenge.from_dict(fetched.json())
    solution = altcha.solve_challenge(challenge, timeout=30)
    assert solution is not None
    return altcha.Payload(challenge, solution).to_base64()


def _edited(payload: str, change: Any) -> str:
    document = json.loads(base64.b64decode(payload))
    change(document)
    return base64.b64encode(json.dumps(document).encode()).decode()


async def _counts(api: Api, form_id: str, secret: str) -> dict[str, int]:
    found = (await api.get(f"/v1/forms/{form_id}/refusals", secret)).json()["data"]
    return {count["reason"]: count["count"] for count in found}


async def test_the_setting_is_off_by_default_and_changed_over_the_api(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session, challenge=False)
    before = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    page_before = await api.get(f"/f/{form_id}")

    changed = await api.patch(f"/v1/forms/{form_id}", secret, json={"challenge": True})
    page = await api.get(f"/f/{form_id}")
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret)).json()["data"]

    assert before["challenge"] is False
    assert "altcha" not in page_before.text
    assert changed.status_code == 200
    assert changed.json()["challenge"] is True
    assert changed.json()["version"] == before["version"]  # not a new version of the form
    assert [e["type"] for e in events].count("form.updated") == 1
    assert '<altcha-widget challenge="/f/' in page.text
    assert '<script type="module" src="/f/static/altcha.js"></script>' in page.text
    # Without script the page says plainly what it needs (hidden by the
    # stylesheet once the widget's script has run).
    assert '<p class="needs-script">This form needs JavaScript' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "worker-src 'self';" in policy


async def test_a_solved_challenge_lets_the_answers_in_once(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    payload = await _solution(api, form_id)

    taken = await api.post(f"/f/{form_id}", data={"name": "Ada", "altcha": payload})
    replayed = await api.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert taken.status_code == 303
    assert replayed.status_code == 422
    assert "Your answers were not sent" in replayed.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1
    assert await _counts(api, form_id, secret) == {"challenge-replayed": 1}


async def test_a_post_without_a_solution_is_refused_and_says_why(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)

    refused = await api.post(f"/f/{form_id}", data={"name": "Ada"})

    assert refused.status_code == 422
    assert "needs JavaScript" in refused.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    assert await _counts(api, form_id, secret) == {"challenge-missing": 1}


def _other_key(document: dict[str, Any]) -> None:
    # A key of the right prefix's length, guessed rather than found.
    key = document["solution"]["derivedKey"]
    document["solution"]["derivedKey"] = key[:-1] + ("0" if key[-1] != "0" else "1")


def _easier(document: dict[str, Any]) -> None:
    # A prefix of one byte, met by the first counter to give one: forged,
    # since the challenge is signed as the server made it.
    document["challenge"]["parameters"]["keyPrefix"] = document["solution"]["derivedKey"][:2]


def _unsigned(document: dict[str, Any]) -> None:
    del document["challenge"]["signature"]


def _later(document: dict[str, Any]) -> None:
    document["challenge"]["parameters"]["expiresAt"] += 3600


@pytest.mark.parametrize(
    "forge",
    [_other_key, _easier, _unsigned, _later],
    ids=["guessed key", "easier prefix", "unsigned", "later expiry"],
)
async def test_a_forged_solution_is_refused(api: Api, session: AsyncSession, forge: Any) -> None:
    form_id, secret = await _form(session)
    payload = _edited(await _solution(api, form_id), forge)

    refused = await api.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert refused.status_code == 422
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    assert await _counts(api, form_id, secret) == {"challenge-invalid": 1}


async def test_a_solution_made_by_another_key_is_refused(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    made = altcha.create_challenge(
        "SHA-256", 1, counter=10, data={"form": form_id}, hmac_secret="not the server's"
    )
    solution = altcha.solve_challenge(made)
    assert solution is not None
    payload = altcha.Payload(made, solution).to_base64()

    refused = await api.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert refused.status_code == 422
    assert await _counts(api, form_id, secret) == {"challenge-invalid": 1}


@pytest.mark.parametrize(
    "payload", ["x", "e30=", "bm90IGpzb24=", "W10=", "A" * 5000, "\u00e9\u0000"]
)
async def test_garbage_in_the_field_is_refused_not_a_500(
    api: Api, session: AsyncSession, payload: str
) -> None:
    form_id, secret = await _form(session)

    refused = await api.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert refused.status_code == 422
    assert await _counts(api, form_id, secret) == {"challenge-invalid": 1}


async def test_another_form_s_solution_is_refused(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    other_id, _ = await _form(session)
    payload = await _solution(api, other_id)

    refused = await api.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert refused.status_code == 422
    assert await _counts(api, form_id, secret) == {"challenge-invalid": 1}


async def test_a_solution_sent_after_the_challenge_expired_is_refused(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    payload = await _solution(api, form_id)

    with shift(timedelta(minutes=api.settings.challenge_minutes, seconds=1)):
        refused = await api.post(f"/f/{form_id}", data={"name": "Ada", "altcha": payload})

    assert refused.status_code == 422
    assert "too long ago" in refused.text
    assert await _counts(api, form_id, secret) == {"challenge-expired": 1}


async def test_no_challenge_is_made_for_a_form_that_asks_none(
    api: Api, session: AsyncSession
) -> None:
    form_id, _ = await _form(session, challenge=False)

    answer = await api.get(f"/f/{form_id}/challenge")
    missing = await api.get("/f/frm_01jd2x8k4m5n6p7q8r9s0t1v2w/challenge")

    assert answer.status_code == missing.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"


async def test_a_replay_to_another_process_on_one_redis_is_refused(
    database_url: str, redis_url: str, session: AsyncSession, api: Api
) -> None:
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4()}",
        challenge_cost=500,
        secret_key=SECRET_KEY,
    )
    form_id, secret = await _form(session)
    async with apps_sharing(settings) as (first, second):
        payload = await _solution(first, form_id)
        taken = await first.post(f"/f/{form_id}", data={"name": "Ada", "altcha": payload})
        replayed = await second.post(f"/f/{form_id}", data={"name": "Bot", "altcha": payload})

    assert (taken.status_code, replayed.status_code) == (303, 422)
    assert await _counts(api, form_id, secret) == {"challenge-replayed": 1}


async def test_spent_challenges_are_forgotten_once_expired(
    api: Api, session: AsyncSession, engine: Any
) -> None:
    form_id, _ = await _form(session)
    payload = await _solution(api, form_id)
    await api.post(f"/f/{form_id}", data={"name": "Ada", "altcha": payload})
    sessionmaker = create_sessionmaker(engine)

    kept = await purge_spent(sessionmaker)
    with shift(timedelta(minutes=api.settings.challenge_minutes, seconds=1)):
        purged = await purge_spent(sessionmaker)

    assert (kept, purged) == (0, 1)
