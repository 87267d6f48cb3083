"""The honeypot's name: a question or hidden field keyed like it once was
(`website`) is an answer like any other, and a bot filling the page's own
honeypot is refused as ever."""

import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.language.blocks import KEY_PATTERN, ROW_PATTERN
from tests.conftest import Api
from tests.hosted.test_logic_pages import _post
from tests.support.factories import create_form, create_key, create_org, publish_over_api
from tests.support.honeypot import honeypot_in

ASKING_WEBSITE: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "url", "key": "website", "title": "Your website", "required": True},
]


async def _form(session: AsyncSession, blocks: list[dict[str, Any]]) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, title="Portfolio review", blocks=blocks)
    await session.commit()
    return form.id, secret


async def _stored(api: Api, form_id: str, secret: str) -> list[dict[str, Any]]:
    found = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    return [submission["answers"] for submission in found]


async def test_a_required_question_keyed_website_is_sent_and_kept(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session, ASKING_WEBSITE)
    page = (await api.get(f"/f/{form_id}")).text

    posted = await api.post(
        f"/f/{form_id}", data=_post(page, {"name": "Ada", "website": "https://ada.example"})
    )

    assert posted.status_code == 303
    assert await _stored(api, form_id, secret) == [
        {"name": "Ada", "website": "https://ada.example"}
    ]


async def test_a_hidden_field_keyed_website_is_carried_from_the_link_and_kept(
    api: Api, session: AsyncSession
) -> None:
    form = {
        "title": "Newsletter",
        "blocks": [ASKING_WEBSITE[0]],
        "hiddenFields": [{"key": "website"}],
    }
    form_id, secret, _ = await publish_over_api(api, session, form)
    page = (await api.get(f"/f/{form_id}?website=partner-blog")).text

    posted = await api.post(f"/f/{form_id}", data=_post(page, {"name": "Ada"}))

    assert posted.status_code == 303
    assert await _stored(api, form_id, secret) == [{"name": "Ada", "website": "partner-blog"}]


async def test_a_bot_filling_the_page_s_honeypot_is_refused_and_counted(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session, ASKING_WEBSITE)
    page = (await api.get(f"/f/{form_id}")).text
    honeypot = honeypot_in(page)
    filled = {"name": "Bot", "website": "https://spam.example", honeypot: "https://spam.example"}

    posted = await api.post(f"/f/{form_id}", data=_post(page, filled))

    # What a person sees after sending: the bot learns nothing to adapt to.
    assert posted.status_code == 303
    assert posted.headers["location"] == f"/f/{form_id}/thanks"
    assert await _stored(api, form_id, secret) == []
    refusals = (await api.get(f"/v1/forms/{form_id}/refusals", secret)).json()["data"]
    assert [(count["reason"], count["count"]) for count in refusals] == [("honeypot", 1)]


async def test_each_form_s_honeypot_has_a_name_of_its_own_that_no_answer_can_have(
    api: Api, session: AsyncSession
) -> None:
    names = []
    for _ in range(8):
        form_id, _ = await _form(session, ASKING_WEBSITE)
        first = honeypot_in((await api.get(f"/f/{form_id}")).text)
        again = honeypot_in((await api.get(f"/f/{form_id}")).text)
        assert first == again  # the same on every load of one form
        names.append(first)

    assert len(set(names)) > 1  # no one name a bot could be told to skip
    for name in names:
        assert not re.match(KEY_PATTERN, name)
        assert not re.match(ROW_PATTERN, name)
        assert not name.startswith("_")
