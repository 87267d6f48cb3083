"""An ending's title and text (a meeting link, a code) belong to the
respondent who reached it: shown once their answers are taken, again on
reload for an hour, in their language, without script; anyone asking the
thank-you page for it by its key gets the general thanks, whatever the
form (a password, invitations only, closed)."""

import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.kit.time import shift
from tests.conftest import Api
from tests.hosted.test_logic_pages import _post
from tests.support.factories import publish_over_api

LINK = "Join at https://meet.example/r/7f3k"
FORM: dict[str, Any] = {
    "title": "Intro call",
    "blocks": [{"type": "short_text", "key": "name", "title": "Your name", "required": True}],
    "endings": [{"key": "booked", "title": "You are booked", "text": LINK}],
    "language": "en",
    "translations": {
        "fr": {
            "title": "Premier appel",
            "blocks": {"name": {"title": "Votre nom"}},
            "endings": {"booked": {"title": "C'est réservé", "text": "Rejoignez-nous ici."}},
        }
    },
}
GENERAL = "Your answers to “Intro call” were received."


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, secret_key="e" * 40)


async def _sent(api: Api, form_id: str, query: str = "") -> httpx.Response:
    page = await api.get(f"/f/{form_id}{query}")
    sent = await api.post(f"/f/{form_id}", data=_post(page.text, {"name": "Ada"}))
    assert sent.status_code == 303, sent.text
    return sent


async def test_the_respondent_sees_their_ending_and_can_reload_it_for_an_hour(
    api: Api, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)

    sent = await _sent(api, form_id)
    where = sent.headers["location"]
    shown = await api.get(where)
    with shift(timedelta(minutes=59)):
        reloaded = await api.get(where)
    with shift(timedelta(minutes=61)):
        later = await api.get(where)

    assert re.fullmatch(rf"/f/{form_id}/thanks\?ending=booked&token=[\w.-]+&lang=en", where)
    for page in (shown, reloaded):
        assert page.status_code == 200
        assert "<h1>You are booked</h1>" in page.text
        assert LINK in page.text
    # Its address holds the pass: kept out of caches and other sites' logs.
    assert shown.headers["cache-control"] == "no-store"
    assert shown.headers["referrer-policy"] == "no-referrer"
    assert later.status_code == 200
    assert LINK not in later.text
    assert GENERAL in later.text


async def test_the_ending_speaks_the_respondent_s_language(api: Api, session: AsyncSession) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)

    sent = await _sent(api, form_id, "?lang=fr")
    shown = await api.get(sent.headers["location"])

    assert sent.headers["location"].endswith("&lang=fr")
    assert "<h1>C&#39;est réservé</h1>" in shown.text
    assert "Rejoignez-nous ici." in shown.text


async def test_without_its_pass_an_ending_shows_to_no_one(api: Api, session: AsyncSession) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)
    other_id, _, _ = await publish_over_api(api, session, FORM)
    waitlist = {"key": "waitlist", "title": "Waiting list"}
    two_endings = {**FORM, "endings": [waitlist, *FORM["endings"]]}
    third_id, _, _ = await publish_over_api(api, session, two_endings)
    theirs = (await _sent(api, other_id)).headers["location"].split("token=")[1].split("&")[0]
    mine = (await _sent(api, third_id)).headers["location"]  # the last ending: booked
    [seconds, signature] = theirs.split(".")
    thanks = f"/f/{form_id}/thanks"

    asked = {
        "by its key": await api.get(thanks, params={"ending": "booked"}),
        "with another form's pass": await api.get(
            thanks, params={"ending": "booked", "token": theirs}
        ),
        "with another ending's pass": await api.get(
            mine.replace("ending=booked", "ending=waitlist")
        ),
        "with a pass made longer": await api.get(
            thanks, params={"ending": "booked", "token": f"{int(seconds) + 86400}.{signature}"}
        ),
        "with a pass of any shape": await api.get(
            thanks, params={"ending": "booked", "token": "x" * 5000}
        ),
        "with a pass for the year 33658": await api.get(
            thanks, params={"ending": "booked", "token": f"{'9' * 12}.{signature}"}
        ),
    }

    for what, answer in asked.items():
        assert answer.status_code == 200, what
        assert LINK not in answer.text, what
        assert "Waiting list" not in answer.text, what
        assert "were received." in answer.text, what


@pytest.mark.parametrize(
    "change",
    [{"password": "2468"}, {"oneResponse": {"by": "invitation"}}, {"status": "closed"}],
    ids=["password", "invitation", "closed"],
)
async def test_a_guarded_or_closed_form_keeps_its_ending_to_those_who_answered(
    api: Api, session: AsyncSession, change: dict[str, Any]
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    assert (await api.patch(f"/v1/forms/{form_id}", secret, json=change)).status_code == 200

    asked = await api.get(f"/f/{form_id}/thanks", params={"ending": "booked"})

    assert asked.status_code == 200
    assert LINK not in asked.text
    assert "You are booked" not in asked.text


async def test_the_respondent_sees_their_ending_whether_or_not_the_server_has_a_key(
    api: Api, session: AsyncSession, database_url: str
) -> None:
    """On PostgreSQL without FORMSAPI_SECRET_KEY no pass can be signed: the
    ending is the answer to the post itself, as one recalling answers is."""
    form_id, _, _ = await publish_over_api(api, session, FORM)
    keyless = create_app(Settings(database_url=database_url, redis_url=None))
    transport = httpx.ASGITransport(app=keyless)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://testserver", follow_redirects=True
    ) as client:
        page = await client.get(f"/f/{form_id}")
        done = await client.post(f"/f/{form_id}", data=_post(page.text, {"name": "Ada"}))
    await release(keyless)

    assert done.status_code == 200
    assert "<h1>You are booked</h1>" in done.text
    assert LINK in done.text
