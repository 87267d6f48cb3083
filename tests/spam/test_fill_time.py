"""The minimum fill time: a hosted form sent sooner after its first page
was served than a person could fill it in is refused, counted as
`too-fast`, and nothing of it is kept; a person who goes back and sends it
again is taken."""

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.kit.time import shift
from tests.conftest import Api
from tests.hosted.test_logic_pages import _post
from tests.support.factories import create_form, create_key, create_org
from tests.support.settled import events_settled

BLOCKS: list[dict[str, object]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True}
]
PAGED: list[dict[str, object]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "page_break", "key": "p2"},
    {"type": "short_text", "key": "city", "title": "Your city"},
]


@pytest.fixture
async def timed(api: Api, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client on an app with the default fill time and a key to sign the
    page's stamp with (PostgreSQL has no key file)."""
    chosen = {"min_fill_seconds": 2.0, "secret_key": [SecretStr("f" * 32)]}
    app = create_app(settings.model_copy(update=chosen))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client
    await release(app)


async def _form(session: AsyncSession, blocks: list[dict[str, object]]) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, title="Contact", blocks=blocks)
    await session.commit()
    return form.id, secret


async def _refusals(timed: httpx.AsyncClient, form_id: str, secret: str) -> list[tuple[str, int]]:
    """The form's refusals, read from the app that refused them (which
    writes the counts it holds before it reads)."""
    headers = {"Authorization": f"Bearer {secret}"}
    counted = (await timed.get(f"/v1/forms/{form_id}/refusals", headers=headers)).json()["data"]
    return [(c["reason"], c["count"]) for c in counted]


async def test_a_form_sent_the_moment_it_was_served_is_refused_and_nothing_kept(
    api: Api, session: AsyncSession, timed: httpx.AsyncClient
) -> None:
    form_id, secret = await _form(session, BLOCKS)
    page = await timed.get(f"/f/{form_id}")

    sent = await timed.post(f"/f/{form_id}", data=_post(page.text, {"name": "Bot"}, go="submit"))

    assert sent.status_code == 422
    assert "sooner than a person fills it in" in sent.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    changes = await api.get(f"/v1/forms/{form_id}/submissions/changes", secret)
    assert changes.json()["data"] == []
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret)).json()["data"]
    assert [e for e in events if e["type"].startswith("submission.")] == []
    assert await _refusals(timed, form_id, secret) == [("too-fast", 1)]


async def test_the_same_page_sent_again_after_the_minimum_is_taken(
    api: Api, session: AsyncSession, timed: httpx.AsyncClient
) -> None:
    form_id, secret = await _form(session, BLOCKS)
    page = await timed.get(f"/f/{form_id}")
    posted = _post(page.text, {"name": "Ada"}, go="submit")
    await timed.post(f"/f/{form_id}", data=posted)

    with shift(timedelta(seconds=2.5)):  # back, a look at the answers, send
        again = await timed.post(f"/f/{form_id}", data=posted)

    assert again.status_code == 303
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_a_form_with_pages_is_timed_from_its_first_page(
    api: Api, session: AsyncSession, timed: httpx.AsyncClient
) -> None:
    form_id, secret = await _form(session, PAGED)
    url = f"/f/{form_id}"
    first = await timed.get(url)
    with shift(timedelta(seconds=1)):
        second = await timed.post(url, data=_post(first.text, {"name": "Ada"}))
        assert "Your city" in second.text  # moving on is never timed
        early = await timed.post(url, data=_post(second.text, {"city": "Paris"}, go="submit"))
    with shift(timedelta(seconds=3)):
        late = await timed.post(url, data=_post(second.text, {"city": "Paris"}, go="submit"))

    assert early.status_code == 422
    assert late.status_code == 303
    answers = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert [a["answers"] for a in answers] == [{"name": "Ada", "city": "Paris"}]
    assert await _refusals(timed, form_id, secret) == [("too-fast", 1)]


async def test_a_post_without_the_pages_stamp_is_not_timed(
    api: Api, session: AsyncSession, timed: httpx.AsyncClient
) -> None:
    """A site's own HTML form, or curl, posting straight to the page: no
    time to judge it by (the proof of work is what stops such bots)."""
    form_id, secret = await _form(session, BLOCKS)

    bare = await timed.post(f"/f/{form_id}", data={"name": "Ada"})
    forged = await timed.post(f"/f/{form_id}", data={"name": "Eve", "_stamp": "1.x"})

    assert (bare.status_code, forged.status_code) == (303, 303)
    assert await _refusals(timed, form_id, secret) == []


async def test_zero_turns_the_check_off(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _form(session, BLOCKS)
    page = await api.get(f"/f/{form_id}")

    sent = await api.post(f"/f/{form_id}", data=_post(page.text, {"name": "Ada"}, go="submit"))

    assert api.settings.min_fill_seconds == 0
    assert sent.status_code == 303
