"""Quotas on answers: "50 places for the Tuesday workshop" closes that option
(shown as full, refused at the question) or ends the form for those who
choose it, exactly at N under concurrency, counted from the kept answer
counts; checked against the form's questions."""

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Submission
from formsapi.tenancy import scoped
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
WORKSHOPS = [
    {"value": "tue", "label": "Tuesday workshop"},
    {"value": "wed", "label": "Wednesday workshop"},
]
BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Name"},
    {"type": "single_choice", "key": "workshop", "title": "Workshop", "options": WORKSHOPS},
    {"type": "dropdown", "key": "meal", "title": "Meal", "options": WORKSHOPS},
    {"type": "multiple_choice", "key": "topics", "title": "Topics", "options": WORKSHOPS},
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _form(session: AsyncSession, quotas: list[dict[str, Any]]) -> tuple[str, str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, blocks=BLOCKS)
    form.quotas = quotas
    await session.commit()
    return org.id, form.id, secret


async def _choose(api: Api, form_id: str, secret: str, workshop: str) -> Any:
    answers = {"name": "Ada", "workshop": workshop}
    return await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})


async def _stored(session: AsyncSession, org_id: str, form_id: str) -> int:
    count = await session.scalar(
        select(func.count()).where(scoped(Submission, org_id), Submission.form_id == form_id)
    )
    await session.commit()  # SQLite: no lock held by the test's session
    return int(count or 0)


TUESDAY = {"question": "workshop", "option": "tue", "limit": 3, "action": "closeOption"}


async def test_a_full_option_is_refused_at_its_question_and_shown_full(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session, [TUESDAY])
    for _ in range(3):
        assert (await _choose(api, form_id, secret, "tue")).status_code == 201
    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert detail["quotas"] == [{**TUESDAY, "message": None, "remaining": 0}]

    refused = await _choose(api, form_id, secret, "tue")
    assert refused.status_code == 422
    [error] = refused.json()["errors"]
    assert error["pointer"] == "/answers/workshop"
    assert "full" in error["detail"]
    assert (await _choose(api, form_id, secret, "wed")).status_code == 201

    page = await api.get(f"/f/{form_id}")
    assert (
        'value="tue" disabled> Tuesday workshop <span class="full-note">(full)</span>' in page.text
    )
    assert 'value="wed"> Wednesday workshop' in page.text
    posted = await api.post(f"/f/{form_id}", data={"name": "Bo", "workshop": "tue"})
    assert posted.status_code == 422
    assert await _stored(session, org_id, form_id) == 4

    # A deleted submission gives its place back.
    [first, *_] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert first["answers"]["workshop"] == "wed"
    tuesdays = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"][1:]
    await api.delete(f"/v1/forms/{form_id}/submissions/{tuesdays[0]['id']}", secret)
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["quotas"][0]["remaining"] == 1
    assert 'value="tue" disabled' not in (await api.get(f"/f/{form_id}")).text
    assert (await _choose(api, form_id, secret, "tue")).status_code == 201


async def test_a_dropdown_option_shows_full_in_its_list(api: Api, session: AsyncSession) -> None:
    quota = {"question": "meal", "option": "wed", "limit": 1}
    _, form_id, secret = await _form(session, [{**quota, "action": "closeOption"}])
    answers = {"name": "Ada", "meal": "wed"}
    url = f"/v1/forms/{form_id}/submissions"
    assert (await api.post(url, secret, json={"answers": answers})).status_code == 201
    assert (await api.post(url, secret, json={"answers": answers})).status_code == 422
    page = await api.get(f"/f/{form_id}")
    assert '<option value="wed" disabled>Wednesday workshop (full)</option>' in page.text


async def test_200_concurrent_posts_race_for_the_last_place_and_one_wins(
    settings: Settings, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session, [{**TUESDAY, "limit": 50}])
    headers = {"Authorization": f"Bearer {secret}"}
    url = f"/v1/forms/{form_id}/submissions"
    body = {"answers": {"name": "Ada", "workshop": "tue"}}
    async with apps_sharing(settings) as clients:
        first = await asyncio.gather(
            *(clients[i % 2].post(url, headers=headers, json=body) for i in range(49))
        )
        assert {r.status_code for r in first} == {201}
        race = await asyncio.gather(
            *(clients[i % 2].post(url, headers=headers, json=body) for i in range(200))
        )
        others = await asyncio.gather(
            *(
                clients[i % 2].post(
                    url, headers=headers, json={"answers": {"name": "B", "workshop": "wed"}}
                )
                for i in range(10)
            )
        )
    assert sorted(r.status_code for r in race) == [201] + [422] * 199
    assert {r.json()["errors"][0]["pointer"] for r in race if r.status_code == 422} == {
        "/answers/workshop"
    }
    assert {r.status_code for r in others} == {201}  # the other option is not full
    assert await _stored(session, org_id, form_id) == 60


async def test_a_quota_that_ends_the_form_shows_its_message_and_stores_nothing(
    api: Api, session: AsyncSession
) -> None:
    message = "Wednesday is full: we will write to you if a place frees up. <b>Thanks</b>"
    quota = {"question": "workshop", "option": "wed", "limit": 1, "action": "endForm"}
    org_id, form_id, secret = await _form(session, [{**quota, "message": message}])
    assert (await _choose(api, form_id, secret, "wed")).status_code == 201

    ended = await _choose(api, form_id, secret, "wed")
    assert ended.status_code == 409
    problem = ended.json()
    assert problem["type"] == "/problems/quota-full"
    assert (problem["question"], problem["option"], problem["message"]) == (
        "workshop",
        "wed",
        message,
    )
    page = await api.get(f"/f/{form_id}")
    assert 'value="wed" disabled' not in page.text  # still offered: choosing it ends the form
    shown = await api.post(f"/f/{form_id}", data={"name": "Bo", "workshop": "wed"})
    assert shown.status_code == 200
    assert (
        "Wednesday is full: we will write to you if a place frees up. &lt;b&gt;Thanks" in shown.text
    )
    assert (await _choose(api, form_id, secret, "tue")).status_code == 201
    assert await _stored(session, org_id, form_id) == 2


async def test_quotas_must_name_a_choice_and_one_of_its_options(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session, [])
    url = f"/v1/forms/{form_id}"
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([{"question": "nope", "option": "tue", "limit": 5}], "/quotas/0/question"),
        ([{"question": "name", "option": "tue", "limit": 5}], "/quotas/0/question"),
        ([{"question": "topics", "option": "tue", "limit": 5}], "/quotas/0/question"),
        ([{"question": "workshop", "option": "fri", "limit": 5}], "/quotas/0/option"),
        ([{"question": "workshop", "option": "tue", "limit": 0}], "/quotas/0/limit"),
        ([{"question": "workshop", "option": "tue", "limit": -1}], "/quotas/0/limit"),
        ([{"question": "workshop", "option": "tue", "limit": 10**12}], "/quotas/0/limit"),
        (
            [{"question": "workshop", "option": "tue", "limit": 5, "action": "x"}],
            "/quotas/0/action",
        ),
        ([TUESDAY, {**TUESDAY, "limit": 9}], "/quotas/1"),
        ([{"question": "workshop", "option": "tue", "limit": 5}] * 51, "/quotas"),
    ]
    for quotas, pointer in cases:
        response = await api.patch(url, secret, json={"quotas": quotas})
        assert response.status_code == 422, (quotas, response.text)
        assert pointer in [e["pointer"] for e in response.json()["errors"]], response.text
    set_ = await api.patch(url, secret, json={"quotas": [TUESDAY]})
    assert set_.json()["quotas"] == [{**TUESDAY, "message": None, "remaining": 3}]
    # The option a quota names cannot leave the form while the quota stays.
    blocks = [{**b, "options": WORKSHOPS[1:]} if b.get("key") == "workshop" else b for b in BLOCKS]
    removed = await api.patch(url, secret, json={"blocks": blocks})
    assert removed.status_code == 422
    assert [e["pointer"] for e in removed.json()["errors"]] == ["/quotas/0/option"]
    cleared = await api.patch(url, secret, json={"blocks": blocks, "quotas": None})
    assert cleared.json()["quotas"] == []
    _, _, stranger = await _form(session, [])
    other = await api.patch(url, stranger, json={"quotas": [TUESDAY]})
    assert other.status_code == 404


async def test_quotas_set_while_posts_arrive_apply_to_the_next_post(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session, [])
    for _ in range(3):  # written the quick way (PostgreSQL's one statement)
        assert (await _choose(api, form_id, secret, "wed")).status_code == 201
    quota = {"question": "workshop", "option": "wed", "limit": 4}
    assert (await api.patch(f"/v1/forms/{form_id}", secret, json={"quotas": [quota]})).json()[
        "quotas"
    ][0]["remaining"] == 1

    posts = await asyncio.gather(*(_choose(api, form_id, secret, "wed") for _ in range(5)))

    assert sorted(r.status_code for r in posts) == [201, 422, 422, 422, 422]
    assert await _stored(session, org_id, form_id) == 4


async def test_a_save_refused_by_its_quotas_leaves_nothing_of_its_version_behind(
    api: Api, session: AsyncSession
) -> None:
    # The refused save's new version is made and checked before its quotas
    # are: its number is the next save's, which must answer with its own.
    _, form_id, secret = await _form(session, [TUESDAY])
    without_workshop = [block for block in BLOCKS if block["key"] != "workshop"]
    refused = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": without_workshop})
    assert refused.status_code == 422, refused.text
    renamed = [{**block, "title": f"New {block['title']}"} for block in BLOCKS]

    saved = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": renamed})
    read = await api.get(f"/v1/forms/{form_id}", secret)
    posted = await _choose(api, form_id, secret, "tue")

    assert saved.status_code == 200, saved.text
    assert read.json()["version"] == 2
    assert read.json()["schema"]["properties"]["workshop"]["title"] == "New Workshop"
    assert posted.status_code == 201, posted.text
