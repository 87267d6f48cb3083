"""Managing forms over the API: create, change, publish, archive, delete."""

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Role
from tests.conftest import Api
from tests.support.factories import BLOCKS, create_form, create_key, create_org, create_submission

WRITE = ["forms:read", "forms:write", "submissions:read", "submissions:write"]


async def _writer(session: AsyncSession, role: str = Role.editor) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, role=role, scopes=WRITE)
    await session.commit()
    return org.id, secret


async def test_create_a_form(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)

    response = await api.post(
        "/v1/forms", secret, json={"title": "Event sign-up!", "blocks": BLOCKS}
    )

    assert response.status_code == 201
    form = response.json()
    assert response.headers["location"] == f"/v1/forms/{form['id']}"
    assert form["status"] == "draft"
    assert form["version"] == 1
    assert form["slug"] == "event-sign-up"
    assert form["responseCount"] == 0
    assert [b["type"] for b in form["blocks"]] == [b["type"] for b in BLOCKS]
    assert form["schema"]["required"] == ["name", "colors"]
    assert (await api.get(f"/v1/forms/{form['id']}", secret)).json() == form


async def test_slugs_are_unique_per_organization(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)
    first = (await api.post("/v1/forms", secret, json={"title": "Survey"})).json()
    second = (await api.post("/v1/forms", secret, json={"title": "Survey"})).json()

    taken = await api.post("/v1/forms", secret, json={"title": "x", "slug": "survey"})

    assert (first["slug"], second["slug"]) == ("survey", "survey-2")
    assert taken.status_code == 409
    assert taken.json()["type"] == "/problems/slug-taken"


async def test_invalid_blocks_list_every_error_with_its_pointer(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    blocks: list[dict[str, Any]] = [
        {"type": "number", "key": "age", "title": "Age", "min": 10, "max": 1},
        {"type": "single_choice", "key": "pick", "title": "Pick", "options": []},
        {"type": "signature", "key": "x", "title": "X"},  # no such type
        {"type": "short_text", "key": "Bad Key", "title": "Name"},
        {"type": "email", "key": "age", "title": "Age again"},
    ]

    response = await api.post("/v1/forms", secret, json={"title": "Bad", "blocks": blocks})

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    pointers = {error["pointer"] for error in response.json()["errors"]}
    assert {
        "/blocks/0",
        "/blocks/1/options",
        "/blocks/2",
        "/blocks/3/key",
        "/blocks/4/key",
    } <= pointers  # a repeated key is reported with the rest
    details = {e["pointer"]: e["detail"] for e in response.json()["errors"]}
    assert details["/blocks/0"] == "min must not exceed max"
    assert details["/blocks/4/key"] == "repeats the key of block 0: keys must be unique"


async def test_numbers_and_flags_of_blocks_take_no_other_json_type(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    blocks: list[dict[str, Any]] = [
        {"type": "number", "key": "n", "title": "N", "max": True, "min": "1"},
        {"type": "rating", "key": "r", "title": "R", "scale": "5"},
        {"type": "short_text", "key": "s", "title": "S", "required": "true", "maxLength": 2.0},
    ]

    response = await api.post("/v1/forms", secret, json={"title": "Lax", "blocks": blocks})

    assert response.status_code == 422, response.text
    pointers = {error["pointer"] for error in response.json()["errors"]}
    assert {
        "/blocks/0/max",
        "/blocks/0/min",
        "/blocks/1/scale",
        "/blocks/2/required",
        "/blocks/2/maxLength",
    } <= pointers


async def test_repeated_question_keys_are_refused(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)
    blocks = [
        {"type": "email", "key": "email", "title": "Email"},
        {"type": "heading", "text": "Again"},
        {"type": "short_text", "key": "email", "title": "Email again"},
    ]

    response = await api.post("/v1/forms", secret, json={"title": "Dup", "blocks": blocks})

    assert response.status_code == 422
    assert [e["pointer"] for e in response.json()["errors"]] == ["/blocks/2/key"]


async def test_changing_blocks_makes_a_new_version_and_old_ones_stay_readable(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    form = (await api.post("/v1/forms", secret, json={"title": "V", "blocks": BLOCKS})).json()
    new_blocks = [*BLOCKS, {"type": "date", "key": "day", "title": "Day"}]

    renamed = (await api.patch(f"/v1/forms/{form['id']}", secret, json={"title": "V2"})).json()
    changed = (
        await api.patch(f"/v1/forms/{form['id']}", secret, json={"blocks": new_blocks})
    ).json()
    old = await api.get(f"/v1/forms/{form['id']}?version=1", secret)
    missing = await api.get(f"/v1/forms/{form['id']}?version=9", secret)

    assert renamed["version"] == 1  # a title is not a new version of the questions
    assert changed["version"] == 2
    assert "day" in changed["schema"]["properties"]
    assert old.status_code == 200
    assert old.json()["version"] == 1
    assert "day" not in old.json()["schema"]["properties"]
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        (["published"], True),
        (["closed"], False),
        (["published", "closed", "published"], True),
        (["published", "draft"], False),
        (["archived"], True),
        (["published", "closed", "archived"], True),
    ],
)
async def test_status_transitions(
    api: Api, session: AsyncSession, path: list[str], allowed: bool
) -> None:
    _, secret = await _writer(session)
    form = (await api.post("/v1/forms", secret, json={"title": "T"})).json()

    for status in path:
        response = await api.patch(f"/v1/forms/{form['id']}", secret, json={"status": status})

    if allowed:
        assert response.status_code == 200
        assert response.json()["status"] == path[-1]
    else:
        assert response.status_code == 409
        body = response.json()
        assert body["type"] == "/problems/invalid-transition"
        assert body["allowedTransitions"]
        assert all(s in body["detail"] for s in body["allowedTransitions"])


async def test_archived_forms_are_read_only(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)
    form = (await api.post("/v1/forms", secret, json={"title": "A"})).json()
    await api.patch(f"/v1/forms/{form['id']}", secret, json={"status": "archived"})

    response = await api.patch(f"/v1/forms/{form['id']}", secret, json={"title": "B"})

    assert response.status_code == 409
    assert response.json()["type"] == "/problems/form-archived"


async def test_deleting_a_form_with_submissions_needs_confirmation(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org)
    await create_submission(session, form)
    await session.commit()

    refused = await api.delete(f"/v1/forms/{form.id}", secret)
    still_there = await api.get(f"/v1/forms/{form.id}/submissions", secret)
    deleted = await api.delete(f"/v1/forms/{form.id}?deleteSubmissions=true", secret)
    gone = await api.get(f"/v1/forms/{form.id}", secret)

    assert refused.status_code == 409
    assert refused.json()["responseCount"] == 1
    assert still_there.json()["pagination"]["total"] == 1
    assert deleted.status_code == 204
    assert gone.status_code == 404


async def test_a_form_without_submissions_deletes_at_once(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)
    form = (await api.post("/v1/forms", secret, json={"title": "D"})).json()

    assert (await api.delete(f"/v1/forms/{form['id']}", secret)).status_code == 204
    assert (await api.get(f"/v1/forms/{form['id']}", secret)).status_code == 404


async def test_writing_needs_the_write_scope(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, reader = await create_key(session, org)  # read scopes only
    form = await create_form(session, org)
    await session.commit()

    for response in (
        await api.post("/v1/forms", reader, json={"title": "No"}),
        await api.patch(f"/v1/forms/{form.id}", reader, json={"title": "No"}),
        await api.delete(f"/v1/forms/{form.id}", reader),
    ):
        assert response.status_code == 403
        assert response.json()["requiredScope"] == "forms:write"


async def test_a_demoted_members_keys_lose_write_access(api: Api, session: AsyncSession) -> None:
    from formsapi.member import service as member_service
    from formsapi.user import repository as user_repository
    from tests.support.factories import create_user

    org = await create_org(session)
    user = await create_user(session)
    _, secret = await create_key(session, org, user=user, role=Role.editor, scopes=WRITE)
    await session.commit()
    assert (await api.post("/v1/forms", secret, json={"title": "Yes"})).status_code == 201

    found = await user_repository.get_by_email(session, user.email)
    assert found is not None
    await member_service.add_directly(session, org.id, found, Role.viewer)
    await session.commit()

    assert (await api.post("/v1/forms", secret, json={"title": "No"})).status_code == 403
    assert (await api.get("/v1/forms", secret)).status_code == 200


async def test_other_organizations_forms_cannot_be_changed(api: Api, session: AsyncSession) -> None:
    _, secret = await _writer(session)
    theirs = await create_form(session, await create_org(session))
    await session.commit()

    for response in (
        await api.patch(f"/v1/forms/{theirs.id}", secret, json={"title": "Mine"}),
        await api.delete(f"/v1/forms/{theirs.id}?deleteSubmissions=true", secret),
    ):
        assert response.status_code == 404


@pytest.mark.parametrize(
    ("content", "content_type", "status"),
    [
        (b'{"title": ', "application/json", 400),
        (b"title=x", "application/x-www-form-urlencoded", 415),
        (b'{"title": "x"}', "text/plain", 415),
        (b'{"title": "' + b"x" * 2_000_000 + b'"}', "application/json", 413),
        (b"[1, 2]", "application/json", 422),
    ],
)
async def test_bad_bodies_are_clear_problems(
    api: Api, session: AsyncSession, content: bytes, content_type: str, status: int
) -> None:
    _, secret = await _writer(session)

    response = await api.client.post(
        "/v1/forms",
        content=content,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": content_type},
    )

    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
