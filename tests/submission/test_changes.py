"""The change feed: every create, edit and delete of a form's submissions, in
commit order, each submission once in its latest state; and the purge of old
tombstones, which expires cursors from before it."""

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.kit.time import shift
from formsapi.submission.retention import purge_tombstones
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission

WRITE = ["forms:read", "forms:write", "submissions:read", "submissions:write"]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


async def _form(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org)
    await session.commit()
    return form.id, secret


async def _post(api: Api, form_id: str, secret: str, name: str) -> dict[str, Any]:
    response = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": name, "colors": "red"}},
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def _changes(api: Api, form_id: str, secret: str, **params: Any) -> dict[str, Any]:
    response = await api.get(f"/v1/forms/{form_id}/submissions/changes", secret, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_creates_edits_and_deletes_come_in_order_each_submission_once(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    ada, bo, cy = [await _post(api, form_id, secret, name) for name in ("Ada", "Bo", "Cy")]
    url = f"/v1/forms/{form_id}/submissions"
    edited = await api.patch(f"{url}/{ada['id']}", secret, json={"answers": {"name": "Ada L."}})
    assert (await api.delete(f"{url}/{bo['id']}", secret)).status_code == 204

    feed = await _changes(api, form_id, secret)

    (tombstone,) = [item for item in feed["data"] if item.get("deleted")]
    assert [item["id"] for item in feed["data"]] == [cy["id"], ada["id"], bo["id"]]
    assert [item["changeSeq"] for item in feed["data"]] == [3, 4, 5]
    assert feed["data"][0] == cy
    assert feed["data"][1] == edited.json()
    assert feed["data"][1]["answers"] == {"name": "Ada L.", "colors": "red"}
    assert feed["data"][1]["version"] == 2
    assert tombstone == {
        "id": bo["id"],
        "changeSeq": 5,
        "deleted": True,
        "deletedAt": tombstone["deletedAt"],
    }
    assert tombstone["deletedAt"].endswith("Z")
    assert feed["next"] == 5
    assert feed["hasMore"] is False
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert form["changeSeq"] == 5


async def test_pages_tile_the_feed_and_next_holds_when_nothing_changed(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    created = [(await _post(api, form_id, secret, f"n{i}"))["id"] for i in range(5)]

    first = await _changes(api, form_id, secret, limit=2)
    second = await _changes(api, form_id, secret, after=first["next"], limit=2)
    third = await _changes(api, form_id, secret, after=second["next"], limit=2)
    url = f"/v1/forms/{form_id}/submissions/changes"
    again = await api.get(url, secret, params={"after": third["next"], "limit": 2})
    repeat = await api.get(url, secret, params={"after": third["next"], "limit": 2})

    seen = [item["id"] for page in (first, second, third) for item in page["data"]]
    assert seen == created
    assert (first["hasMore"], second["hasMore"], third["hasMore"]) == (True, True, False)
    assert again.json() == {"data": [], "next": 5, "hasMore": False}
    assert again.content == repeat.content  # the same bytes while nothing changes
    later = await _post(api, form_id, secret, "later")
    assert (await _changes(api, form_id, secret, after=5))["data"] == [later]


async def test_the_feed_is_a_forms_own_and_reads_like_a_missing_form_elsewhere(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    other_id, other_secret = await _form(session)
    await _post(api, form_id, secret, "Ada")
    await _post(api, other_id, other_secret, "Bo")

    mine = await _changes(api, form_id, secret)
    theirs = await api.get(f"/v1/forms/{other_id}/submissions/changes", secret)
    missing = await api.get("/v1/forms/frm_nope/submissions/changes", secret)

    assert [item["answers"]["name"] for item in mine["data"]] == ["Ada"]
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["detail"] == missing.json()["detail"].replace("frm_nope", other_id)


async def test_a_deleted_forms_feed_answers_404_and_the_form_leaves_the_list(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    await _post(api, form_id, secret, "Ada")

    deleted = await api.delete(f"/v1/forms/{form_id}", secret, params={"deleteSubmissions": True})

    assert deleted.status_code == 204
    feed = await api.get(f"/v1/forms/{form_id}/submissions/changes", secret, params={"after": 1})
    assert feed.status_code == 404
    listed = (await api.get("/v1/forms", secret)).json()
    assert form_id not in [form["id"] for form in listed["data"]]


@pytest.mark.parametrize(
    "params",
    [{"after": -1}, {"after": "x"}, {"limit": 0}, {"limit": 1001}, {"after": 2**63}],
)
async def test_a_bad_cursor_or_limit_is_a_400(
    api: Api, session: AsyncSession, params: dict[str, Any]
) -> None:
    form_id, secret = await _form(session)

    response = await api.get(f"/v1/forms/{form_id}/submissions/changes", secret, params=params)

    assert response.status_code == 400
    assert response.json()["type"] == "/problems/invalid-parameters"


async def test_limit_defaults_to_100_and_allows_1000(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    for i in range(101):
        await _post(api, form_id, secret, f"n{i}")

    default = await _changes(api, form_id, secret)
    most = await _changes(api, form_id, secret, limit=1000)

    assert (len(default["data"]), default["hasMore"], default["next"]) == (100, True, 100)
    assert (len(most["data"]), most["hasMore"], most["next"]) == (101, False, 101)


async def test_reading_the_feed_needs_the_submissions_read_scope(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, forms_only = await create_key(session, org, scopes=["forms:read"])
    form = await create_form(session, org)
    await session.commit()
    url = f"/v1/forms/{form.id}/submissions/changes"

    assert (await api.get(url)).status_code == 401
    refused = await api.get(url, forms_only)
    assert refused.status_code == 403


async def test_a_cursor_from_before_purged_tombstones_must_copy_again(
    api: Api, session: AsyncSession, settings: Settings, engine: Any
) -> None:
    form_id, secret = await _form(session)
    ada, bo, cy = [await _post(api, form_id, secret, name) for name in ("Ada", "Bo", "Cy")]
    url = f"/v1/forms/{form_id}/submissions"
    with shift(timedelta(days=-31)):
        assert (await api.delete(f"{url}/{ada['id']}", secret)).status_code == 204  # change 4
    assert (await api.delete(f"{url}/{bo['id']}", secret)).status_code == 204  # change 5
    sessionmaker = async_sessionmaker(engine, expire_on_commit=False)

    purged = await purge_tombstones(sessionmaker, settings.tombstone_days)

    assert purged == 1
    expired = await api.get(f"{url}/changes", secret, params={"after": 3})
    assert expired.status_code == 410
    assert expired.headers["content-type"] == "application/problem+json"
    assert expired.json()["type"] == "/problems/cursor-expired"
    assert expired.json()["tombstoneHorizon"] == 4
    # At or past the horizon nothing was missed; from 0 a fresh copy has nothing to delete.
    at_horizon = await _changes(api, form_id, secret, after=4)
    assert [item["id"] for item in at_horizon["data"]] == [bo["id"]]
    fresh = await _changes(api, form_id, secret)
    assert [(item["id"], item.get("deleted", False)) for item in fresh["data"]] == [
        (cy["id"], False),
        (bo["id"], True),
    ]


async def test_a_cursor_past_the_forms_latest_change_is_refused(
    api: Api, session: AsyncSession
) -> None:
    """A copy taken from a database since restored from an older backup: its
    cursor is ahead of the form, and the feed would silently skip changes."""
    form_id, secret = await _form(session)
    await _post(api, form_id, secret, "Ada")

    response = await api.get(
        f"/v1/forms/{form_id}/submissions/changes", secret, params={"after": 7}
    )

    assert response.status_code == 410
    assert response.json()["changeSeq"] == 1


async def test_forms_carry_their_latest_change_number(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    busy = await create_form(session, org)
    quiet = await create_form(session, org)
    await session.commit()
    ada = await _post(api, busy.id, secret, "Ada")
    await api.delete(f"/v1/forms/{busy.id}/submissions/{ada['id']}", secret)

    listed = (await api.get("/v1/forms", secret)).json()["data"]
    one = (await api.get(f"/v1/forms/{busy.id}", secret)).json()

    assert {form["id"]: form["changeSeq"] for form in listed} == {busy.id: 2, quiet.id: 0}
    assert one["changeSeq"] == 2


def _long_texts(count: int) -> list[dict[str, Any]]:
    return [
        {"type": "long_text", "key": f"q{index}", "title": f"Q{index}", "max_length": 100_000}
        for index in range(count)
    ]


def _filled(count: int, digit: int) -> dict[str, str]:
    """Answers to _long_texts(count) of 100,000 bytes each."""
    return {f"q{q}": str(digit) * 100_000 for q in range(count)}


async def _megabyte_answers(session: AsyncSession, count: int) -> tuple[str, str]:
    """A form of `count` submissions of a megabyte each (_filled(10, n) for
    n in order), and a key to it."""
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org, blocks=_long_texts(10))
    for index in range(count):
        await create_submission(session, form, answers=_filled(10, index))
    await session.commit()
    return form.id, secret


async def test_a_page_of_large_answers_stops_early_and_the_rest_follows(
    api: Api, session: AsyncSession
) -> None:
    """A page holds about 4 MiB of answers past its first row, however many
    rows `limit` allows: six submissions of a megabyte come as five, then one."""
    form_id, secret = await _megabyte_answers(session, 6)

    first = await _changes(api, form_id, secret, limit=1000)
    second = await _changes(api, form_id, secret, limit=1000, after=first["next"])
    exported = (await api.get(f"/v1/forms/{form_id}/submissions/export", secret)).content

    assert [item["changeSeq"] for item in first["data"]] == [1, 2, 3, 4, 5]
    assert first["hasMore"] is True
    assert [item["changeSeq"] for item in second["data"]] == [6]
    assert second["hasMore"] is False
    assert second["data"][0]["answers"]["q9"] == "5" * 100_000
    lines = exported.splitlines()
    assert len(lines) == 7
    assert lines[-1] == b'{"end":true,"changeSeq":6,"count":6}'


async def test_a_page_stopped_by_its_answers_keeps_the_deletes_among_them_in_order(
    api: Api, session: AsyncSession
) -> None:
    """A delete numbered between large submissions comes in its place, and
    the page stops where the answers before a row reach about 4 MiB: five
    changes (one a delete) of 1.1 MB submissions, then the rest."""
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org, blocks=_long_texts(11))
    big = [await create_submission(session, form, answers=_filled(11, n)) for n in range(4)]
    await session.commit()
    deleted = await api.delete(f"/v1/forms/{form.id}/submissions/{big[0].id}", secret)
    assert deleted.status_code == 204, deleted.text
    for n in (4, 5):
        await create_submission(session, form, answers=_filled(11, n))
    await session.commit()

    first = await _changes(api, form.id, secret, limit=1000)
    second = await _changes(api, form.id, secret, limit=1000, after=first["next"])

    assert [(item["changeSeq"], item.get("deleted", False)) for item in first["data"]] == [
        (2, False),
        (3, False),
        (4, False),
        (5, True),
        (6, False),
    ]
    assert first["data"][3]["id"] == big[0].id
    assert first["hasMore"] is True
    assert [item["changeSeq"] for item in second["data"]] == [7]
    assert second["data"][0]["answers"]["q10"] == "5" * 100_000
    assert second["hasMore"] is False


async def test_a_page_whose_answers_reach_the_bound_at_the_form_s_end_says_no_more(
    api: Api, session: AsyncSession
) -> None:
    """hasMore is exact on both engines: five submissions of a megabyte fill
    a page past 4 MiB, and nothing follows them."""
    form_id, secret = await _megabyte_answers(session, 5)

    page = await _changes(api, form_id, secret, limit=1000)

    assert [item["changeSeq"] for item in page["data"]] == [1, 2, 3, 4, 5]
    assert page["hasMore"] is False
