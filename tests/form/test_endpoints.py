from datetime import UTC, datetime, timedelta

import jsonschema
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi import demo
from formsapi.demo.data import TEMPLATES
from formsapi.language.blocks import BlockList
from formsapi.models import Role
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_lists_forms_newest_first_with_tie_break_on_id(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    older = await create_form(session, org, created_at=T0 - timedelta(days=1), form_id="frm_a")
    same_a = await create_form(session, org, created_at=T0, form_id="frm_b")
    same_b = await create_form(session, org, created_at=T0, form_id="frm_c")
    await session.commit()

    response = await api.get("/v1/forms", secret)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert [f["id"] for f in body["data"]] == [same_b.id, same_a.id, older.id]
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 3}
    assert body["data"][0] == {
        "id": "frm_c",
        "title": "Form",
        "slug": same_b.slug,
        "status": "published",
        "responseCount": 0,
        "createdAt": "2026-03-01T12:00:00.000Z",
        "changeSeq": 0,
    }


async def test_form_pages_cover_all_forms_once(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    ids = {
        (await create_form(session, org, created_at=T0 + timedelta(seconds=i % 3))).id
        for i in range(7)
    }
    await session.commit()

    seen: list[str] = []
    for page in (1, 2, 3):
        body = (await api.get(f"/v1/forms?page={page}&limit=3", secret)).json()
        assert body["pagination"] == {"page": page, "limit": 3, "total": 7}
        seen += [form["id"] for form in body["data"]]
    assert sorted(seen) == sorted(ids)
    beyond = (await api.get("/v1/forms?page=4&limit=3", secret)).json()
    assert beyond == {"data": [], "pagination": {"page": 4, "limit": 3, "total": 7}}


async def test_limit_defaults_to_50_and_allows_100(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    for i in range(101):
        await create_form(session, org, created_at=T0 + timedelta(minutes=i))
    await session.commit()

    default = (await api.get("/v1/forms", secret)).json()
    assert len(default["data"]) == 50
    assert default["pagination"] == {"page": 1, "limit": 50, "total": 101}
    most = (await api.get("/v1/forms?limit=100", secret)).json()
    assert len(most["data"]) == 100


async def test_lists_only_the_keys_organization(api: Api, session: AsyncSession) -> None:
    mine, theirs = await create_org(session), await create_org(session)
    _, secret = await create_key(session, mine)
    kept = await create_form(session, mine)
    await create_form(session, theirs)
    await session.commit()

    body = (await api.get("/v1/forms", secret)).json()

    assert [form["id"] for form in body["data"]] == [kept.id]
    assert body["pagination"]["total"] == 1


async def test_response_count_counts_submissions(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org)
    for _ in range(3):
        await create_submission(session, form)
    await session.commit()

    body = (await api.get("/v1/forms", secret)).json()

    assert body["data"][0]["responseCount"] == 3


async def test_single_form_has_blocks_and_answer_schema(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, created_at=T0)
    await session.commit()

    response = await api.get(f"/v1/forms/{form.id}", secret)

    assert response.status_code == 200
    body = response.json()
    assert body["updatedAt"] == "2026-03-01T12:00:00.000Z"
    assert body["version"] == 1
    assert [b["type"] for b in body["blocks"]] == [
        "heading",
        "short_text",
        "email",
        "number",
        "page_break",
        "multiple_choice",
    ]
    assert body["blocks"][3] == {
        "type": "number",
        "key": "age",
        "title": "Age",
        "required": False,
        "min": 0,
        "max": 130,
        "integer": True,
    }
    schema = body["schema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["name", "colors"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["age"] == {
        "title": "Age",
        "type": "integer",
        "minimum": 0,
        "maximum": 130,
    }
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate({"name": "Ada", "email": "ada@example.com", "age": 36, "colors": "red,blue"})
    for wrong in (
        {"name": "Ada"},  # required choice missing
        {"name": "Ada", "colors": "green"},  # unknown option
        {"name": "Ada", "colors": "red", "age": 200},  # out of range
        {"name": "Ada", "colors": "red", "email": "nope"},
        {"name": "Ada", "colors": "red", "extra": 1},
    ):
        assert not validator.is_valid(wrong), wrong


async def test_every_demo_answer_satisfies_its_forms_schema(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    await demo.fill(session, org.id, forms=len(TEMPLATES), submissions=400, seed=7)
    await session.commit()

    forms = (await api.get("/v1/forms", secret)).json()["data"]
    assert len(forms) == len(TEMPLATES)
    assert sum(form["responseCount"] for form in forms) == 400
    for summary in forms:
        form = (await api.get(f"/v1/forms/{summary['id']}", secret)).json()
        BlockList.validate_python(form["blocks"])  # what we serve, we accept back
        validator = jsonschema.Draft202012Validator(
            form["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        page = (await api.get(f"/v1/forms/{summary['id']}/submissions?limit=100", secret)).json()
        for submission in page["data"]:
            validator.validate(submission["answers"])
            assert all(isinstance(v, str | int | float) for v in submission["answers"].values())


async def test_form_of_another_organization_reads_as_missing(
    api: Api, session: AsyncSession
) -> None:
    mine, theirs = await create_org(session), await create_org(session)
    _, secret = await create_key(session, mine)
    foreign = await create_form(session, theirs)
    await session.commit()

    for path in (f"/v1/forms/{foreign.id}", f"/v1/forms/{foreign.id}/submissions"):
        other = await api.get(path, secret)
        missing = await api.get(path.replace(foreign.id, "frm_missing"), secret)
        assert other.status_code == missing.status_code == 404
        assert other.headers["content-type"] == "application/problem+json"
        assert other.json() | {"detail": "", "instance": ""} == missing.json() | {
            "detail": "",
            "instance": "",
        }
        assert foreign.id in other.json()["detail"]  # echoes the request, nothing more


async def test_viewer_keys_read_forms(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, role=Role.viewer)
    await create_form(session, org)
    await session.commit()

    assert (await api.get("/v1/forms", secret)).status_code == 200


async def test_key_without_forms_scope_is_forbidden(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=["submissions:read"])
    form = await create_form(session, org)
    await session.commit()

    response = await api.get("/v1/forms", secret)

    assert response.status_code == 403
    assert response.json()["requiredScope"] == "forms:read"
    assert (await api.get(f"/v1/forms/{form.id}/submissions", secret)).status_code == 200
