"""With mail set up, "Save and continue later" mails the link instead of
showing it."""

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.hosted.test_logic_pages import _hidden, _post
from tests.partial.test_partials import FORM
from tests.support.factories import publish_over_api
from tests.support.mail import Inbox, smtp_server

PUBLIC = "https://forms.example.com"


@pytest.fixture
def mail() -> Iterator[tuple[str, Inbox]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def settings(database_url: str, mail: tuple[str, Any]) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        smtp_url=mail[0],
        public_url=PUBLIC,
        rate_limit_standard=100_000,
    )


async def test_the_link_is_mailed_and_opens_the_form_where_they_left_off(
    api: Api, session: AsyncSession, mail: tuple[str, Inbox]
) -> None:
    inbox = mail[1]
    form_id, _, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Flo"}, go="save"))
    assert "/resume/" not in saved.text
    assert "Email me the link" in saved.text
    token = dict(_hidden(saved.text))["_resume"]

    for bad in ("flo", "a@[b.c", "a@" + "." * 20_000 + "@", "x" * 300 + "@example.com"):
        refused = await api.post(f"{url}/resume-link", data={"_resume": token, "email": bad})
        assert refused.status_code == 422, bad
    mailed = await api.post(
        f"{url}/resume-link", data={"_resume": token, "email": "flo@example.com"}
    )
    assert mailed.status_code == 200
    [message] = inbox.to("flo@example.com")
    link = inbox.link_in(message)
    assert link.startswith(f"{PUBLIC}/f/{form_id}/resume/")  # never the Host header

    resumed = await api.get(urlsplit(link).path)
    assert resumed.status_code == 200
    assert 'value="Flo"' in resumed.text


async def test_links_mailed_are_bounded_per_address_and_only_for_answers_kept(
    api: Api, session: AsyncSession, mail: tuple[str, Inbox]
) -> None:
    inbox = mail[1]
    form_id, _, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Gus"}, go="save"))
    token = dict(_hidden(saved.text))["_resume"]

    made_up = await api.post(
        f"{url}/resume-link", data={"_resume": "A" * 43, "email": "victim@example.com"}
    )
    assert made_up.status_code == 404
    statuses = [
        (
            await api.post(
                f"{url}/resume-link", data={"_resume": token, "email": "victim@example.com"}
            )
        ).status_code
        for _ in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    assert len(inbox.to("victim@example.com")) == 3
