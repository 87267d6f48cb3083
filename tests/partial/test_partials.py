"""Save-and-resume on the hosted page, and partial responses: kept apart
from submissions until completed, listed for drop-off analysis, erased and
purged without a trace."""

import asyncio
import re
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.kit.redact import redact_url
from formsapi.kit.time import shift
from formsapi.models import Organization, PartialResponse
from formsapi.partial.retention import purge_partials
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.hosted.test_logic_pages import _hidden, _post
from tests.support.factories import create_key, publish_over_api
from tests.support.settled import events_settled

FORM: dict[str, Any] = {
    "title": "Apply",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "page_break", "key": "contact"},
        {"type": "email", "key": "email", "title": "Your email", "required": True},
    ],
    "resumeDays": 7,
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url, rate_limit_standard=100_000, public_url="https://forms.test"
    )


def _token(page: str) -> str:
    return dict(_hidden(page))["_resume"]


def _link(page: str) -> str:
    match = re.search(r'href="(https://forms\.test/f/[^"]+/resume/[^"]+)"', page)
    assert match, page
    return urlsplit(match.group(1)).path


def _at(shown: str) -> datetime:
    return datetime.fromisoformat(shown.replace("Z", "+00:00"))


async def _rows(session: AsyncSession) -> int:
    everything = unscoped(select(func.count()).select_from(PartialResponse), "a test's count")
    return int(await session.scalar(everything) or 0)


async def test_a_respondent_saves_leaves_and_resumes_where_they_left_off(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"

    first = await api.get(url)
    assert "Save and continue later" in first.text
    second = await api.post(url, data=_post(first.text, {"name": "Ada"}))
    assert second.headers["cache-control"] == "no-store"  # it holds their link's secret
    saved = await api.post(url, data=_post(second.text, {"email": "ada@exa"}, go="save"))
    assert saved.status_code == 200
    assert "Your answers are saved" in saved.text
    link = _link(saved.text)
    assert link.endswith(_token(second.text))

    # Another day, another browser: the link opens the second page, answers kept.
    resumed = await api.get(link)
    assert resumed.status_code == 200
    assert "Page 2 of 2" in resumed.text
    assert 'value="ada@exa"' in resumed.text
    assert ("name", "Ada") in _hidden(resumed.text)

    done = await api.post(url, data=_post(resumed.text, {"email": "ada@example.com"}))
    assert done.status_code == 303
    listed = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    assert [s["answers"] for s in listed["data"]] == [{"name": "Ada", "email": "ada@example.com"}]

    # Used: the link says so, and a second send of the last page stores nothing.
    used = await api.get(link)
    assert used.status_code == 410
    assert "sent already" in used.text
    again = await api.post(url, data=_post(resumed.text, {"email": "ada@example.com"}))
    assert again.status_code == 409
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_partials_are_listed_for_drop_off_but_never_as_submissions(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    await api.post(url, data=_post(first.text, {"name": "Bo"}))

    partials = await api.get(f"/v1/forms/{form_id}/partials", secret)
    assert partials.status_code == 200
    [partial] = partials.json()["data"]
    assert partials.json()["pagination"] == {"page": 1, "limit": 50, "total": 1}
    assert partial["lastPage"] == 2
    assert partial["answers"] == {"name": "Bo"}
    assert partial["startedAt"].endswith("Z")

    org = await session.get_one(Organization, org_id)
    _, forms_only = await create_key(session, org, scopes=["forms:read"])
    await session.commit()
    shown = (await api.get(f"/v1/forms/{form_id}/partials", forms_only)).json()["data"]
    assert "answers" not in shown[0]  # answers need submissions:read

    submissions = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    assert submissions["data"] == []
    assert submissions["pagination"]["total"] == 0
    changes = (await api.get(f"/v1/forms/{form_id}/submissions/changes", secret)).json()
    assert changes["data"] == []
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret)).json()["data"]
    assert not [e for e in events if e["type"].startswith("submission.")]


async def test_completing_makes_one_submission_one_event_and_one_change(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    second = await api.post(url, data=_post(first.text, {"name": "Cy"}))

    # The last page sent twice at once (a double click): one is stored.
    sent = await asyncio.gather(
        *(api.post(url, data=_post(second.text, {"email": "cy@example.com"})) for _ in range(2))
    )
    assert sorted(r.status_code for r in sent) == [303, 409]
    changes = (await api.get(f"/v1/forms/{form_id}/submissions/changes", secret)).json()
    assert [c["changeSeq"] for c in changes["data"]] == [1]
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret)).json()["data"]
    assert [e["type"] for e in events if e["type"].startswith("submission.")] == [
        "submission.created"
    ]
    assert (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"] == []


@pytest.mark.parametrize(
    "token",
    ["A" * 43, "short", "x" * 42 + ".", "%00" * 10, "A" * 64],
)
async def test_a_guessed_or_malformed_link_is_a_clear_404(
    api: Api, session: AsyncSession, token: str
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)
    response = await api.get(f"/f/{form_id}/resume/{token}")
    assert response.status_code == 404
    assert "not valid" in response.text


async def test_an_expired_link_is_refused_and_purged_with_its_answers(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Di"}, go="save"))
    link = _link(saved.text)
    assert (await api.get(link)).status_code == 200

    with shift(timedelta(days=7, minutes=1)):  # the form keeps them 7 days
        assert (await api.get(link)).status_code == 404
        assert (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"] == []
        assert await purge_partials(create_sessionmaker(engine)) == 1
    assert await _rows(session) == 0


async def test_a_changed_resume_time_holds_for_partials_saved_before_it(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    """Kept for `resumeDays` after their last change: a shorter time set
    later expires what was saved before it too (what a privacy policy asks),
    and a longer one keeps it for as long as it keeps new ones."""
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Ed"}, go="save"))
    link = _link(saved.text)
    listed = f"/v1/forms/{form_id}/partials"
    [before] = (await api.get(listed, secret)).json()["data"]

    shortened = await api.patch(f"/v1/forms/{form_id}", secret, json={"resumeDays": 2})
    assert shortened.status_code == 200, shortened.text
    [after] = (await api.get(listed, secret)).json()["data"]
    assert after["updatedAt"] == before["updatedAt"]
    assert _at(before["expiresAt"]) - _at(before["updatedAt"]) == timedelta(days=7)
    assert _at(after["expiresAt"]) - _at(after["updatedAt"]) == timedelta(days=2)
    with shift(timedelta(days=2, minutes=1)):
        assert (await api.get(link)).status_code == 404
        assert (await api.get(listed, secret)).json()["data"] == []
        assert await purge_partials(create_sessionmaker(engine)) == 1
    assert await _rows(session) == 0
    await session.rollback()  # the session's transaction holds SQLite's write lock

    # Longer: saved again, then kept 10 days from its change, not 2.
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Flo"}, go="save"))
    link = _link(saved.text)
    lengthened = await api.patch(f"/v1/forms/{form_id}", secret, json={"resumeDays": 10})
    assert lengthened.status_code == 200, lengthened.text
    with shift(timedelta(days=9, hours=23)):
        assert (await api.get(link)).status_code == 200
    with shift(timedelta(days=10, minutes=1)):
        assert (await api.get(link)).status_code == 404


async def test_an_erased_partial_leaves_nothing_and_its_link_stops(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    other_form, other_secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    saved = await api.post(url, data=_post(first.text, {"name": "Ed"}, go="save"))
    [partial] = (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"]

    # Another organization's key meets exactly what a missing partial meets.
    foreign = await api.delete(f"/v1/forms/{other_form}/partials/{partial['id']}", other_secret)
    missing = await api.delete(f"/v1/forms/{other_form}/partials/prt_missing", other_secret)
    assert foreign.status_code == missing.status_code == 404

    erased = await api.delete(f"/v1/forms/{form_id}/partials/{partial['id']}", secret)
    assert erased.status_code == 204
    assert (await api.get(_link(saved.text))).status_code == 404
    assert await _rows(session) == 0


async def test_a_tab_left_open_after_sending_stores_nothing_more(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    second = await api.post(url, data=_post(first.text, {"name": "Hal"}))
    done = await api.post(url, data=_post(second.text, {"email": "hal@example.com"}))
    assert done.status_code == 303

    # The same page moved back and on again from the stale tab.
    back = await api.post(url, data=_post(second.text, {}, go="back"))
    assert back.status_code == 409
    assert (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"] == []
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_the_furthest_page_reached_is_listed_and_the_link_opens_where_they_were(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    second = await api.post(url, data=_post(first.text, {"name": "Ida"}))
    back = await api.post(url, data=_post(second.text, {}, go="back"))
    saved = await api.post(url, data=_post(back.text, {"name": "Ida"}, go="save"))

    [partial] = (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"]
    assert partial["lastPage"] == 2
    resumed = await api.get(_link(saved.text))
    assert "Page 1 of 2" in resumed.text
    assert resumed.headers["referrer-policy"] == "no-referrer"


async def test_what_a_script_sends_to_fill_the_database_is_refused(
    api: Api, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)
    one_page, _, _ = await publish_over_api(
        api, session, {**FORM, "blocks": FORM["blocks"][:1], "logic": []}
    )
    url = f"/f/{form_id}"
    first = await api.get(url)

    huge = await api.post(url, data=_post(first.text, {"name": "x" * 300_000}, go="save"))
    assert huge.status_code == 413
    single = await api.post(f"/f/{one_page}", data={"_page": "0", "_go": "save", "name": "Jo"})
    assert single.status_code == 400
    assert await _rows(session) == 0


def test_resume_links_are_kept_out_of_logged_paths() -> None:
    path = "/f/frm_1/resume/L0S4hllMhvhv26nN_ahC7yrQXH49wytcfA3at2Xy0uY"
    assert redact_url(f'"GET {path} HTTP/1.1" 200') == (
        '"GET /f/frm_1/resume/[redacted] HTTP/1.1" 200'
    )
