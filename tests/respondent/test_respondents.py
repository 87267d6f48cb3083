"""Access and erasure by person: POST /v1/respondents/export exports every
submission and partial response of the organization whose email answer (or
a chosen hidden field) equals a value; /erase erases them all in one
request, each submission as a DELETE does, and leaves nothing of them in
the submissions, the feed's rows, the stored events or the files. Another
organization holding the same address is never found nor touched; each
export and erasure leaves an audit entry holding no value and no answer."""

from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.file import service as file_service
from formsapi.file.storage import Storages
from formsapi.models import Event, File, Organization, PartialResponse, Role
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.hosted.test_logic_pages import _post as page_post
from tests.support.factories import create_key, publish_over_api
from tests.support.settled import events_settled

PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40
ADA = "ada.lovelace@example.com"

SIGN_UP: dict[str, Any] = {
    "title": "Sign up",
    "hiddenFields": [{"key": "ref"}],
    "blocks": [
        {"type": "email", "key": "email", "title": "Your email", "required": True},
        {"type": "page_break", "key": "more"},
        {"type": "short_text", "key": "name", "title": "Your name"},
        {
            "type": "file",
            "key": "cv",
            "title": "Your CV",
            "accept": ["application/pdf"],
            "maxSize": 1024 * 1024,
        },
    ],
}
# The same address in a question that is not of type email: not searched.
NOTES: dict[str, Any] = {
    "title": "Notes",
    "blocks": [
        {"type": "short_text", "key": "email", "title": "Anything"},
        {"type": "email", "key": "contact", "title": "Contact"},
    ],
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        secret_key=["p" * 40],
        public_url="https://forms.test",
    )


async def _submit(api: Api, secret: str, form_id: str, answers: dict[str, Any]) -> str:
    posted = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})
    assert posted.status_code == 201, posted.text
    return str(posted.json()["id"])


async def _second_form(api: Api, secret: str, form: dict[str, Any]) -> str:
    created = await api.post("/v1/forms", secret, json=form)
    assert created.status_code == 201, created.text
    form_id = str(created.json()["id"])
    await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    return form_id


async def _partial(api: Api, form_id: str, email: str) -> None:
    """A respondent who gave their email on the first page and went no further."""
    first = await api.get(f"/f/{form_id}")
    second = await api.post(f"/f/{form_id}", data=page_post(first.text, {"email": email}))
    assert second.status_code == 200, second.text


async def _count(engine: AsyncEngine, model: Any) -> int:
    async with create_write_sessionmaker(engine)() as session:
        every = unscoped(select(func.count()).select_from(model), "a test counts every row")
        return int(await session.scalar(every) or 0)


async def _stored_events(engine: AsyncEngine) -> list[str]:
    async with create_write_sessionmaker(engine)() as session:
        every = unscoped(select(Event.data), "every event the tests' organizations made")
        return list((await session.scalars(every)).all())


async def test_a_person_is_found_exported_and_erased_in_their_organization_only(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, SIGN_UP)
    notes_id = await _second_form(api, secret, NOTES)
    other_form, other_secret, _ = await publish_over_api(api, session, SIGN_UP)

    cv = await api.post(
        f"/v1/forms/{form_id}/files",
        secret,
        params={"question": "cv", "name": "cv.pdf"},
        content=PDF,
    )
    first_post = {"answers": {"email": ADA, "name": "Ada", "cv": cv.json()["id"]}}
    once = {"Idempotency-Key": "sign-up-1"}
    posted = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json=first_post, headers=once
    )
    theirs = [
        posted.json()["id"],
        await _submit(api, secret, notes_id, {"contact": "ADA.Lovelace@Example.COM"}),
    ]
    not_theirs = [
        await _submit(api, secret, form_id, {"email": "bob@example.com", "name": "Bob"}),
        await _submit(api, secret, notes_id, {"email": ADA}),  # not an email question
    ]
    elsewhere = await _submit(api, other_secret, other_form, {"email": ADA, "name": "Ada"})
    await _partial(api, form_id, "Ada.Lovelace@example.com")
    await _partial(api, other_form, ADA)
    assert await _count(engine, PartialResponse) == 2

    exported = await api.post("/v1/respondents/export", secret, json={"email": ADA.upper()})
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-disposition"] == 'attachment; filename="respondent-data.json"'
    assert exported.headers["cache-control"] == "no-store"
    data = exported.json()
    assert sorted(s["id"] for s in data["submissions"]) == sorted(theirs)
    assert data["complete"] is True
    [partial] = data["partials"]
    assert partial["formId"] == form_id
    assert partial["answers"]["email"] == "Ada.Lovelace@example.com"
    first = next(s for s in data["submissions"] if s["id"] == theirs[0])
    assert first["answers"]["name"] == "Ada"
    assert first["formId"] == form_id

    erased = await api.post("/v1/respondents/erase", secret, json={"email": ADA})
    assert erased.status_code == 200, erased.text
    assert erased.json() == {"submissions": 2, "partials": 1, "more": False}
    again = await api.post("/v1/respondents/export", secret, json={"email": ADA})
    assert again.json() == {"submissions": [], "partials": [], "complete": True}

    # Gone from the submissions, the counts and the feed's rows; others kept.
    for form, kept in ((form_id, not_theirs[0]), (notes_id, not_theirs[1])):
        listed = (await api.get(f"/v1/forms/{form}/submissions", secret)).json()
        assert [s["id"] for s in listed["data"]] == [kept]
        assert (await api.get(f"/v1/forms/{form}", secret)).json()["responseCount"] == 1
        feed = await api.get(f"/v1/forms/{form}/submissions/changes", secret, params={"after": 0})
        deleted = [c for c in feed.json()["data"] if c.get("deleted")]
        assert [c["id"] for c in deleted] == [s for s in theirs if s in [c["id"] for c in deleted]]
        assert len(deleted) == 1
        assert all("answers" not in c for c in deleted)
    # A retry of the first post replays what it answered, without the answers.
    replayed = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json=first_post, headers=once
    )
    assert replayed.status_code == 201
    assert replayed.json()["id"] == theirs[0]
    assert replayed.json()["answers"] == {}
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1
    # The file they uploaded goes with their submission.
    sessionmaker = create_write_sessionmaker(engine)
    await file_service.purge(sessionmaker, Storages(settings, sessionmaker, sessionmaker))  # type: ignore[arg-type]
    assert await _count(engine, File) == 0
    assert (await api.get(f"/v1/files/{cv.json()['id']}", secret)).status_code == 404
    # Their answers left every event of their organization, which says what happened.
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret, params={"limit": 1000})).json()["data"]
    about = [e for e in events if e["data"] and e["data"].get("id") in theirs]
    assert (
        sorted(e["type"] for e in about) == ["submission.created"] * 2 + ["submission.deleted"] * 2
    )
    assert all(e["data"].get("redacted") for e in about if e["type"] == "submission.created")
    leaks = [d for d in await _stored_events(engine) if ADA in d.lower()]
    # Only the note that was no email answer, and the other organization's.
    assert len(leaks) == 2
    assert all(not_theirs[1] in d or elsewhere in d for d in leaks)

    # The other organization still has everything.
    other = await api.post("/v1/respondents/export", other_secret, json={"email": ADA})
    assert [s["id"] for s in other.json()["submissions"]] == [elsewhere]
    assert len(other.json()["partials"]) == 1
    assert await _count(engine, PartialResponse) == 1

    # Audited: who, what, when and how many; never the address nor an answer.
    audit = await api.get("/v1/audit-entries", secret)
    assert audit.status_code == 200
    entries = audit.json()["data"]
    assert [(e["action"], e["count"]) for e in entries] == [
        ("respondent.exported", 0),
        ("respondent.erased", 3),
        ("respondent.exported", 3),
    ]
    assert {e["actor"]["kind"] for e in entries} == {"key"}
    assert {e["actor"]["name"] for e in entries} == {"test"}
    assert b"ada" not in audit.content.lower()
    other_audit = (await api.get("/v1/audit-entries", other_secret)).json()["data"]
    assert [e["action"] for e in other_audit] == ["respondent.exported"]


async def test_a_hidden_field_is_matched_exactly_whatever_its_characters(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, SIGN_UP)
    tricky = [
        "x' OR '1'='1",
        '"}, "a": {"b',
        "%",
        "_",
        "$.email",
        "a\\b",
        "ÉCOLE",
        "école",
        "日本",
    ]
    ids = {}
    for value in tricky:
        ids[value] = await _submit(api, secret, form_id, {"email": "x@example.com", "ref": value})
    for value in tricky:
        found = await api.post(
            "/v1/respondents/export", secret, json={"field": "ref", "value": value}
        )
        assert found.status_code == 200, (value, found.text)
        assert [s["id"] for s in found.json()["submissions"]] == [ids[value]], value
    # Exact: case matters for hidden fields, and no pattern matches ("%", "_").
    none = await api.post(
        "/v1/respondents/export", secret, json={"field": "ref", "value": "X' OR '1'='1"}
    )
    assert none.json()["submissions"] == []
    for near in ("%%", "x", "日", "$"):
        missed = await api.post(
            "/v1/respondents/export", secret, json={"field": "ref", "value": near}
        )
        assert missed.json()["submissions"] == [], near

    erased = await api.post("/v1/respondents/erase", secret, json={"field": "ref", "value": "%"})
    assert erased.json() == {"submissions": 1, "partials": 0, "more": False}
    listed = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    assert listed["pagination"]["total"] == len(tricky) - 1


async def test_bad_queries_are_clear_4xx_problems_that_touch_nothing(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, SIGN_UP)
    kept = await _submit(api, secret, form_id, {"email": ADA})
    cases: list[tuple[Any, int]] = [
        ({}, 400),
        ({"email": ADA, "field": "ref", "value": "x"}, 400),
        ({"field": "ref"}, 400),
        ({"value": ADA}, 400),
        ({"email": ADA, "value": ADA}, 400),
        ({"field": "nope", "value": "x"}, 400),  # no form has it
        ({"email": ""}, 422),
        ({"email": "a" * 10_000}, 422),
        ({"email": "ada\x00@example.com"}, 422),
        ({"email": 42}, 422),
        ({"email": ADA, "extra": 1}, 422),
        ({"field": "ref", "value": "v" * 501}, 422),
        ({"field": "ref;drop", "value": "x"}, 422),
        ({"field": "r" * 65, "value": "x"}, 422),
        ([ADA], 422),
    ]
    for params, status in cases:
        for action in ("export", "erase"):
            answered = await api.post(f"/v1/respondents/{action}", secret, json=params)
            assert answered.status_code == status, (action, params, answered.text)
            assert answered.headers["content-type"] == "application/problem+json"
        not_json = await api.post(
            f"/v1/respondents/{action}", secret, content=ADA, headers={"content-type": "text/plain"}
        )
        assert not_json.status_code == 415
    listed = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    assert [s["id"] for s in listed["data"]] == [kept]
    audit = (await api.get("/v1/audit-entries", secret)).json()["data"]
    assert audit == []


async def test_erasing_needs_submissions_write_and_exporting_submissions_read(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, SIGN_UP)
    kept = await _submit(api, secret, form_id, {"email": ADA})
    org = await session.get_one(Organization, org_id)
    _, reader = await create_key(session, org, scopes=["submissions:read"])
    _, forms_only = await create_key(session, org, scopes=["forms:read"])
    _, viewer = await create_key(session, org, role=Role.viewer, scopes=["submissions:read"])
    await session.commit()
    params = {"email": ADA}

    assert (await api.post("/v1/respondents/export", forms_only, json=params)).status_code == 403
    assert (await api.get("/v1/audit-entries", forms_only)).status_code == 403
    for key in (reader, viewer, forms_only):
        refused = await api.post("/v1/respondents/erase", key, json=params)
        assert refused.status_code == 403
        assert refused.json()["requiredScope"] == "submissions:write"
    assert (await api.post("/v1/respondents/erase", None, json=params)).status_code == 401
    read = await api.post("/v1/respondents/export", viewer, json=params)
    assert [s["id"] for s in read.json()["submissions"]] == [kept]
    assert (await api.get(f"/v1/forms/{form_id}/submissions/{kept}", secret)).status_code == 200
    entries = (await api.get("/v1/audit-entries", reader)).json()["data"]
    assert [e["action"] for e in entries] == ["respondent.exported"]
    assert orjson.dumps(entries).count(b"respondent.erased") == 0
