"""Inputs an attacker or a broken client sends, table by table: each gets a
clear 4xx (a problem document from the API, a page from the site), never a
500, and the database is left as it was. The schema-driven fuzz run
(tests/test_fuzz.py) covers what a generator produces; this covers what
generators do not: deep nesting, lone surrogates, huge numbers, NUL bytes,
invalid UTF-8."""

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.scopes import Scope
from formsapi.config import Settings
from formsapi.models import Role
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.web.conftest import Browser, add_member

BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Name"},
    {"type": "number", "key": "n", "title": "A number"},
    {"type": "rating", "key": "r", "title": "A rating"},
]


def _nested(depth: int) -> bytes:
    return b'{"answers": {"name": ' + b"[" * depth + b"1" + b"]" * depth + b"}}"


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # {form} is the form's id
    status: int
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] | None = None


JSON = {"Content-Type": "application/json"}
SUBMISSIONS = "/v1/forms/{form}/submissions"

API_CASES = {
    "answers nested 256 deep": Case("POST", SUBMISSIONS, 400, _nested(256), JSON),
    "body nested 100,000 deep": Case("POST", SUBMISSIONS, 400, b"[" * 100_000, JSON),
    "lone surrogate in a key": Case(
        "POST", SUBMISSIONS, 400, b'{"answers": {"\\ud800": "x"}}', JSON
    ),
    "lone surrogate in a value": Case(
        "POST", SUBMISSIONS, 400, b'{"answers": {"name": "\\udfff"}}', JSON
    ),
    "309-digit number": Case(
        "POST", SUBMISSIONS, 400, b'{"answers": {"n": ' + b"9" * 309 + b"}}", JSON
    ),
    "309-digit rating": Case(
        "POST", SUBMISSIONS, 400, b'{"answers": {"r": ' + b"9" * 309 + b"}}", JSON
    ),
    "integer past 2**53": Case(
        "POST", SUBMISSIONS, 422, b'{"answers": {"n": 18014398509481985}}', JSON
    ),
    "invalid UTF-8": Case("POST", SUBMISSIONS, 400, b'{"answers": {"name": "\xff\xfe"}}', JSON),
    "NUL in an answer": Case("POST", SUBMISSIONS, 422, b'{"answers": {"name": "a\\u0000"}}', JSON),
    "NUL in a title": Case("POST", "/v1/forms", 422, b'{"title": "a\\u0000"}', JSON),
    "NUL in the form id": Case("GET", "/v1/forms/frm_%00/submissions", 400),
    "NUL in a submission id": Case("GET", SUBMISSIONS + "/sub_%00", 400),
    "NUL in since": Case("GET", SUBMISSIONS + "?since=2026%00", 400),
    "NUL in the Idempotency-Key": Case(
        "POST", SUBMISSIONS, 400, b'{"answers": {}}', {**JSON, "Idempotency-Key": "a\x00b"}
    ),
    "page past 64 bits": Case("GET", "/v1/forms?page=99999999999999999999999", 400),
    "limit as a float": Case("GET", "/v1/forms?limit=1e3", 400),
    "since past year 9999": Case("GET", SUBMISSIONS + "?since=9999-12-31T23:59:59-14:00", 400),
    "version past 32 bits": Case("GET", "/v1/forms/{form}?version=4294967296", 400),
    "answers not an object": Case("POST", SUBMISSIONS, 422, b'{"answers": [1, 2]}', JSON),
    "body a bare string": Case("POST", SUBMISSIONS, 422, b'"answers"', JSON),
}

SITE_CASES = {
    "hosted: NUL in a field": Case("POST", "/f/{form}", 422, data={"name": "a\x00"}),
    "hosted: huge number": Case("POST", "/f/{form}", 422, data={"n": "9" * 309}),
    "hosted: NUL in the form id": Case("GET", "/f/frm_%00", 404),
    "hosted: a newline after the form id": Case("GET", "/f/{form}%0A", 404),
    "site: NUL in a key id": Case("GET", "/settings/keys/key_%00/revoke", 400),
    "site: NUL in a member id": Case("GET", "/settings/members/usr_%00/remove", 400),
    "site: NUL in a form id": Case("GET", "/forms/frm_%00", 400),
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _form_and_key(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=[str(scope) for scope in Scope])
    form = await create_form(session, org, blocks=BLOCKS)
    await session.commit()
    return form.id, secret


async def _count(api: Api, form_id: str, secret: str) -> int:
    page = await api.get(f"/v1/forms/{form_id}", secret)
    return int(page.json()["responseCount"])


@pytest.mark.parametrize("case", API_CASES.values(), ids=API_CASES.keys())
async def test_the_api_answers_hostile_input_with_a_problem(
    api: Api, session: AsyncSession, case: Case
) -> None:
    form_id, secret = await _form_and_key(session)

    response = await api.request(
        case.method,
        case.path.format(form=form_id),
        secret,
        content=case.body,
        headers=case.headers,
    )

    assert response.status_code == case.status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == case.status
    assert await _count(api, form_id, secret) == 0


@pytest.mark.parametrize("case", SITE_CASES.values(), ids=SITE_CASES.keys())
async def test_the_site_answers_hostile_input_with_a_clear_page(
    api: Api, session: AsyncSession, case: Case
) -> None:
    form_id, secret = await _form_and_key(session)
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    await Browser(api.client).sign_in(owner.email)

    response = await api.client.request(
        case.method,
        case.path.format(form=form_id),
        content=case.body,
        data=case.data,
        headers=case.headers,
    )

    assert response.status_code == case.status, response.text
    assert await _count(api, form_id, secret) == 0
