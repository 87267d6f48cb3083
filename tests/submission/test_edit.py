"""Correcting a submission's answers: a merge patch, checked like a new
submission against the form version it answered, guarded by If-Match, safe
to retry with an Idempotency-Key."""

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.kit.time import shift, utcnow
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, publish_over_api

WRITE = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
ADA = {"name": "Ada", "email": "ada@example.com", "colors": "red"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


async def _submitted(api: Api, session: AsyncSession) -> tuple[str, str, dict[str, Any]]:
    """A key, the url of a submission, and the submission."""
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org)
    await session.commit()
    created = await api.post(f"/v1/forms/{form.id}/submissions", secret, json={"answers": ADA})
    assert created.status_code == 201
    body: dict[str, Any] = created.json()
    return secret, f"/v1/forms/{form.id}/submissions/{body['id']}", body


async def test_a_patch_merges_answers_and_null_removes_one(api: Api, session: AsyncSession) -> None:
    secret, url, before = await _submitted(api, session)

    response = await api.patch(
        url, secret, json={"answers": {"name": "Ada Lovelace", "email": None, "age": 36}}
    )

    assert response.status_code == 200
    after = response.json()
    assert after["answers"] == {"name": "Ada Lovelace", "age": 36, "colors": "red"}
    assert after["version"] == 2
    assert after["changeSeq"] == before["changeSeq"] + 1
    assert after["updatedAt"] >= before["submittedAt"] == after["submittedAt"]
    assert response.headers["etag"] == '"2"'
    read = await api.get(url, secret)
    assert read.json() == after
    assert read.headers["etag"] == '"2"'


async def test_merge_patch_json_is_accepted(api: Api, session: AsyncSession) -> None:
    secret, url, _ = await _submitted(api, session)

    response = await api.patch(
        url,
        secret,
        content=b'{"answers": {"name": "Ada L."}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert response.status_code == 200
    assert response.json()["answers"]["name"] == "Ada L."


async def test_an_invalid_result_is_refused_and_changes_nothing(
    api: Api, session: AsyncSession
) -> None:
    secret, url, before = await _submitted(api, session)
    form_url = url.rsplit("/submissions/", 1)[0]

    removed_required = await api.patch(url, secret, json={"answers": {"name": None}})
    out_of_range = await api.patch(url, secret, json={"answers": {"age": 500}})
    unknown = await api.patch(url, secret, json={"answers": {"shoe": "42"}})

    for refused in (removed_required, out_of_range, unknown):
        assert refused.status_code == 422
        assert refused.json()["type"] == "/problems/validation-failed"
    assert removed_required.json()["errors"][0]["pointer"] == "/answers/name"
    assert (await api.get(url, secret)).json() == before
    form = (await api.get(form_url, secret)).json()
    assert form["changeSeq"] == before["changeSeq"]


async def test_answers_are_checked_against_the_version_they_answered(
    api: Api, session: AsyncSession
) -> None:
    secret, url, _ = await _submitted(api, session)
    form_url = url.rsplit("/submissions/", 1)[0]
    blocks = [{"type": "short_text", "key": "city", "title": "City", "required": True}]
    assert (await api.patch(form_url, secret, json={"blocks": blocks})).status_code == 200

    fixed = await api.patch(url, secret, json={"answers": {"name": "Ada L."}})
    new_question = await api.patch(url, secret, json={"answers": {"city": "London"}})

    assert fixed.status_code == 200
    assert fixed.json()["formVersion"] == 1
    assert new_question.status_code == 422  # version 1 asked no city


async def test_if_match_refuses_an_edit_of_a_changed_submission(
    api: Api, session: AsyncSession
) -> None:
    secret, url, _ = await _submitted(api, session)
    etag = (await api.get(url, secret)).headers["etag"]
    first = await api.patch(
        url, secret, json={"answers": {"name": "A"}}, headers={"If-Match": etag}
    )

    stale = await api.patch(
        url, secret, json={"answers": {"name": "B"}}, headers={"If-Match": etag}
    )
    weak = await api.patch(
        url, secret, json={"answers": {"name": "B"}}, headers={"If-Match": 'W/"2"'}
    )
    listed = await api.patch(
        url, secret, json={"answers": {"name": "C"}}, headers={"If-Match": '"7", "2"'}
    )
    anything = await api.patch(
        url, secret, json={"answers": {"name": "D"}}, headers={"If-Match": "*"}
    )

    assert first.status_code == 200
    assert stale.status_code == weak.status_code == 412
    assert stale.json()["type"] == "/problems/stale-submission"
    assert stale.headers["etag"] == '"2"'
    assert listed.status_code == anything.status_code == 200
    assert (await api.get(url, secret)).json()["answers"]["name"] == "D"


async def test_a_retried_edit_with_its_key_is_applied_once(api: Api, session: AsyncSession) -> None:
    secret, url, _ = await _submitted(api, session)
    key = {"Idempotency-Key": "fix-typo-1"}

    first = await api.patch(url, secret, json={"answers": {"name": "Ada L."}}, headers=key)
    again = await api.patch(url, secret, json={"answers": {"name": "Ada L."}}, headers=key)
    other = await api.patch(url, secret, json={"answers": {"name": "Bo"}}, headers=key)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["etag"] == first.headers["etag"] == '"2"'
    assert other.status_code == 422
    assert other.json()["type"] == "/problems/idempotency-key-reused"
    assert (await api.get(url, secret)).json()["version"] == 2


async def test_a_missing_submission_or_another_organizations_reads_as_missing(
    api: Api, session: AsyncSession
) -> None:
    secret, url, _ = await _submitted(api, session)
    other_secret, other_url, _ = await _submitted(api, session)
    form_url = url.rsplit("/submissions/", 1)[0]

    missing = await api.patch(f"{form_url}/submissions/sub_nope", secret, json={"answers": {}})
    theirs = await api.patch(other_url, secret, json={"answers": {"name": "X"}})

    assert missing.status_code == theirs.status_code == 404
    assert (await api.get(other_url, other_secret)).json()["version"] == 1


async def test_editing_needs_the_write_scope_and_a_json_body(
    api: Api, session: AsyncSession
) -> None:
    secret, url, _ = await _submitted(api, session)
    org = await create_org(session)
    _, reader = await create_key(session, org, scopes=["submissions:read"])
    await session.commit()

    read_only = await api.patch(url, reader, json={"answers": {"name": "X"}})
    not_json = await api.patch(
        url, secret, content=b"name=X", headers={"Content-Type": "text/plain"}
    )
    extra = await api.patch(url, secret, json={"answers": {}, "formVersion": 2})

    assert read_only.status_code == 403
    assert not_json.status_code == 415
    assert extra.status_code == 422


async def test_a_deleted_submission_cannot_be_edited(api: Api, session: AsyncSession) -> None:
    secret, url, _ = await _submitted(api, session)
    assert (await api.delete(url, secret)).status_code == 204

    response = await api.patch(url, secret, json={"answers": {"name": "X"}})

    assert response.status_code == 404


async def test_an_edit_that_changes_nothing_moves_no_number(
    api: Api, session: AsyncSession
) -> None:
    """Else a syncing client comparing the form's changeSeq with its cursor
    would find the form changed on every run and its feed empty."""
    secret, url, before = await _submitted(api, session)
    form_url = url.split("/submissions/")[0]

    same = await api.patch(url, secret, json={"answers": {"name": "Ada"}})
    empty = await api.patch(url, secret, json={"answers": {}})

    assert same.status_code == empty.status_code == 200
    assert same.json() == empty.json() == before | {"updatedAt": before["submittedAt"]}
    assert same.headers["etag"] == '"1"'
    form = (await api.get(form_url, secret)).json()
    assert form["changeSeq"] == before["changeSeq"]
    feed = (await api.get(f"{form_url}/submissions/changes", secret, params={"after": 1})).json()
    assert feed == {"data": [], "next": 1, "hasMore": False}


async def test_an_edit_reaching_another_ending_with_the_same_answers_is_a_change(
    api: Api, session: AsyncSession
) -> None:
    """Logic can read the date: answers kept as they were may now end elsewhere,
    and the change feed, the events and the summaries must say so."""
    yesterday = (utcnow() - timedelta(days=1)).date().isoformat()
    form = {
        "title": "Late?",
        "blocks": [{"type": "yes_no", "key": "ok", "title": "OK?"}],
        "logic": [{"if": {"==": [{"today": []}, yesterday]}, "then": [{"jump": "early"}]}],
        "endings": [{"key": "early", "title": "Early"}, {"key": "late", "title": "Late"}],
    }
    form_id, secret, _ = await publish_over_api(api, session, form)
    path = f"/v1/forms/{form_id}/submissions"
    with shift(timedelta(days=-1)):
        posted = (await api.post(path, secret, json={"answers": {"ok": "yes"}})).json()
    assert posted["ending"] == "early"

    edited = await api.patch(f"{path}/{posted['id']}", secret, json={"answers": {"ok": "yes"}})

    assert edited.status_code == 200, edited.text
    assert (edited.json()["ending"], edited.json()["version"]) == ("late", 2)
    assert edited.json()["changeSeq"] > posted["changeSeq"]
    summary = (await api.get(f"/v1/forms/{form_id}/summary", secret)).json()
    assert {e["key"]: e["count"] for e in summary["endings"]} == {"early": 0, "late": 1}
