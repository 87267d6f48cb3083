"""Posts to one form arriving together are written together (group commit):
each is still answered only after its commit, numbered without gaps in
commit order, with one event, and an invalid one leaves nothing."""

import asyncio
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Event, Form, Submission, SubmissionCount, SubmissionDayCount
from formsapi.tenancy import scoped
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write", "events:read"]
GOOD = {"name": "Ada", "email": "ada@example.com", "colors": "blue"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


async def _form(session: AsyncSession, status: str = "published") -> tuple[str, str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, status=status)
    await session.commit()
    return org.id, form.id, secret


async def test_posts_arriving_together_are_each_stored_once_in_order(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"
    bodies: list[dict[str, Any]] = [
        {"answers": {**GOOD, "name": f"R{i}"}} if i % 5 else {"answers": {"age": "old"}}
        for i in range(120)
    ]

    responses = await asyncio.gather(*(api.post(url, secret, json=body) for body in bodies))

    created = [r.json() for r in responses if r.status_code == 201]
    refused = [r for r in responses if r.status_code != 201]
    assert len(created) == 96
    assert all(r.status_code == 422 for r in refused)
    assert sorted(c["changeSeq"] for c in created) == list(range(1, 97))  # no gap, no repeat
    assert {c["answers"]["name"] for c in created} == {f"R{i}" for i in range(120) if i % 5}
    for submission in created[:10]:
        read = await api.get(f"{url}/{submission['id']}", secret)
        assert read.json() == submission
    rows = await session.scalar(
        select(func.count()).where(scoped(Submission, org_id), Submission.form_id == form_id)
    )
    events = (
        await session.execute(
            select(Event.subject_id).where(
                scoped(Event, org_id),
                Event.form_id == form_id,
                Event.type == "submission.created",
            )
        )
    ).scalars()
    counted = await session.scalar(
        select(Form.response_count).where(scoped(Form, org_id), Form.id == form_id)
    )
    hourly = await session.scalar(
        select(func.sum(SubmissionCount.count)).where(
            scoped(SubmissionCount, org_id), SubmissionCount.form_id == form_id
        )
    )
    assert rows == counted == hourly == 96
    assert sorted(str(e) for e in events) == sorted(
        c["id"] for c in created
    )  # one event each, no other
    feed = await api.get(f"{url}/changes", secret, params={"limit": 1000})
    assert [c["changeSeq"] for c in feed.json()["data"]] == list(range(1, 97))


async def test_posts_queued_behind_a_new_version_are_checked_against_it(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"
    assert (await api.post(url, secret, json={"answers": GOOD})).status_code == 201
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    blocks = [
        {**block, "required": True} if block.get("key") == "age" else block
        for block in form["blocks"]
    ]

    edit = api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": blocks})
    posts = [api.post(url, secret, json={"answers": GOOD}) for _ in range(30)]
    edited, *responses = await asyncio.gather(edit, *posts)

    assert edited.status_code == 200, edited.text
    # Each post answered version 1 (and was stored) or met version 2's
    # required age (and was refused): none stored against the wrong version.
    for response in responses:
        if response.status_code == 201:
            assert response.json()["formVersion"] == 1
        else:
            assert response.status_code == 422
            assert [e["pointer"] for e in response.json()["errors"]] == ["/answers/age"]
    late = await api.post(url, secret, json={"answers": GOOD})
    assert late.status_code == 422


async def test_a_form_not_taking_posts_fails_only_its_own(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    published = await create_form(session, org)
    draft = await create_form(session, org, status="draft")
    await session.commit()

    responses = await asyncio.gather(
        *(
            api.post(f"/v1/forms/{form.id}/submissions", secret, json={"answers": GOOD})
            for form in (published, draft) * 10
        ),
        api.post("/v1/forms/frm_01HZZZZZZZZZZZZZZZZZZZZZZZ/submissions", secret, json={}),
        api.post(
            "/v1/forms/frm_01HZZZZZZZZZZZZZZZZZZZZZZZ/submissions",
            secret,
            json={"answers": GOOD},
        ),
    )

    assert [r.status_code for r in responses[:20]] == [201, 409] * 10
    assert responses[21].status_code == 404
    assert responses[1].json()["formStatus"] == "draft"


async def test_posts_with_one_idempotency_key_arriving_together_store_one(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"
    same = {"Idempotency-Key": "launch-1"}
    other_body = {"answers": {**GOOD, "name": "Bo"}}

    responses = await asyncio.gather(
        *(api.post(url, secret, json={"answers": GOOD}, headers=same) for _ in range(10)),
        *(api.post(url, secret, json=other_body, headers=same) for _ in range(3)),
        *(
            api.post(url, secret, json={"answers": GOOD}, headers={"Idempotency-Key": f"k{i}"})
            for i in range(20)
        ),
        *(api.post(url, secret, json={"answers": GOOD}) for _ in range(20)),
    )

    retried, reused, keyed, plain = (
        responses[:10],
        responses[10:13],
        responses[13:33],
        responses[33:],
    )
    # Whichever body's post claimed the key first is stored and replayed to
    # its repeats; the other body meets 422 (the key is another request's).
    first, other = (retried, reused) if retried[0].status_code == 201 else (reused, retried)
    assert {r.status_code for r in first} == {201}
    assert len({r.content for r in first}) == 1  # the first outcome, replayed
    assert {r.headers["Location"] for r in first} == {
        f"/v1/forms/{form_id}/submissions/{first[0].json()['id']}"
    }
    assert {r.status_code for r in other} == {422}
    assert {r.status_code for r in keyed + plain} == {201}
    rows = await session.scalar(
        select(func.count()).where(scoped(Submission, org_id), Submission.form_id == form_id)
    )
    assert rows == 1 + 20 + 20
    again = await api.post(url, secret, json={"answers": GOOD}, headers={"Idempotency-Key": "k3"})
    assert again.content == keyed[3].content


async def test_an_invalid_post_does_not_use_up_its_key_in_a_batch(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"
    key = {"Idempotency-Key": "fix-and-retry"}

    first, *others = await asyncio.gather(
        api.post(url, secret, json={"answers": {"age": "old"}}, headers=key),
        *(api.post(url, secret, json={"answers": GOOD}) for _ in range(5)),
    )

    assert first.status_code == 422
    assert {r.status_code for r in others} == {201}
    # The key was not kept: the corrected request is taken, with that key.
    corrected = await api.post(url, secret, json={"answers": GOOD}, headers=key)
    assert corrected.status_code == 201, corrected.text


async def test_plain_and_keyed_posts_are_stored_alike_with_events_in_change_order(
    api: Api, session: AsyncSession
) -> None:
    # On PostgreSQL posts are written by one statement, keyed or not, and
    # those to a form with quotas the general way; all three must leave the
    # same rows, events, kept outcomes and counts.
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    essay = {"type": "long_text", "key": "essay", "title": "Essay", "maxLength": 60_000}
    monday = [{"value": "mon", "label": "Monday"}]
    day = {"type": "single_choice", "key": "day", "title": "Day", "options": monday}
    form = await create_form(session, org, blocks=[essay, day])
    quoted = await create_form(session, org, blocks=[essay, day])
    quoted.quotas = [{"question": "day", "option": "mon", "limit": 1, "action": "closeOption"}]
    await session.commit()
    # Around the size past which an event carries its submission thin.
    lengths = [10, 19_700, 19_850, 19_900, 19_950, 20_100, 30_000] * 3

    responses: dict[str, list[httpx.Response]] = {form.id: [], quoted.id: []}
    for form_id, keyed in ((form.id, False), (form.id, True), (quoted.id, True)):
        responses[form_id] += await asyncio.gather(
            *(
                api.post(
                    f"/v1/forms/{form_id}/submissions",
                    secret,
                    json={"answers": {"essay": "é" * (n // 2) + "x" * (n % 2)}},
                    headers={"Idempotency-Key": f"{form_id}-{i}"} if keyed else None,
                )
                for i, n in enumerate(lengths)
            )
        )

    for form_id, answered in responses.items():
        await _stored_as_answered(api, session, secret, org.id, form_id, answered)
    # Each keyed post's outcome is kept: sent again, it is answered the same.
    for form_id, answered in (
        (form.id, responses[form.id][len(lengths) :]),
        (quoted.id, responses[quoted.id]),
    ):
        again = await api.post(
            f"/v1/forms/{form_id}/submissions",
            secret,
            json={"answers": {"essay": "x"}},  # not what was sent: the key decides
            headers={"Idempotency-Key": f"{form_id}-0"},
        )
        assert again.status_code == 422  # the key is another request's
        first = await api.post(
            f"/v1/forms/{form_id}/submissions",
            secret,
            json={"answers": {"essay": "é" * 5}},
            headers={"Idempotency-Key": f"{form_id}-0"},
        )
        assert (first.status_code, first.content) == (201, answered[0].content)
        assert first.headers["Location"] == answered[0].headers["Location"]


async def _stored_as_answered(
    api: Api,
    session: AsyncSession,
    secret: str,
    org_id: str,
    form_id: str,
    responses: list[httpx.Response],
) -> None:
    assert [r.status_code for r in responses] == [201] * len(responses)
    created = {r.json()["id"]: r.json() for r in responses}
    assert sorted(c["changeSeq"] for c in created.values()) == list(range(1, len(created) + 1))
    events = (
        await session.execute(
            select(Event.subject_id, Event.data)
            .where(
                scoped(Event, org_id),
                Event.form_id == form_id,
                Event.type == "submission.created",
            )
            .order_by(Event.seq)
        )
    ).all()
    # One event each, numbered in change order, carrying what the API answered
    # or, past 20,000 bytes of JSON, its thin form.
    assert [created[str(subject)]["changeSeq"] for subject, _ in events] == sorted(
        c["changeSeq"] for c in created.values()
    )
    url = f"/v1/forms/{form_id}/submissions"
    for subject, data in events:
        submission = created[str(subject)]
        whole = orjson.dumps(submission)
        if len(whole) <= 20_000:
            assert orjson.loads(data) == submission
        else:
            assert orjson.loads(data) == {
                "id": submission["id"],
                "formId": form_id,
                "version": 1,
                "changeSeq": submission["changeSeq"],
                "url": f"{url}/{submission['id']}",
                "thin": True,
            }
        read = await api.get(f"{url}/{subject}", secret)
        assert read.json() == submission
    counts = [
        await session.scalar(
            select(func.sum(table.count)).where(scoped(table, org_id), table.form_id == form_id)
        )
        for table in (SubmissionCount, SubmissionDayCount)
    ]
    counted = await session.scalar(
        select(Form.response_count).where(scoped(Form, org_id), Form.id == form_id)
    )
    assert counts == [counted, counted] == [len(created)] * 2


async def test_submission_times_follow_change_numbers_across_processes(
    settings: Settings, session: AsyncSession
) -> None:
    # Each process numbers its own batches; a batch's time is read once it
    # holds the form's lock, so a later number never has an earlier time.
    _, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"
    headers = {"Authorization": f"Bearer {secret}"}
    # Two connections a process: batches wait for one, as under load.
    crowded = settings.model_copy(update={"database_pool_size": 2})

    async with apps_sharing(crowded, count=4) as clients:
        responses = await asyncio.gather(
            *(clients[i % 4].post(url, headers=headers, json={"answers": GOOD}) for i in range(400))
        )

    assert {r.status_code for r in responses} == {201}
    created = sorted((r.json() for r in responses), key=lambda c: c["changeSeq"])
    assert [c["changeSeq"] for c in created] == list(range(1, 401))
    times = [c["submittedAt"] for c in created]
    assert times == sorted(times)
    assert all(c["updatedAt"] == c["submittedAt"] for c in created)
