"""Taking submissions over the API, and reading and deleting single ones."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.idempotency.service import RETENTION
from formsapi.kit.time import shift
from formsapi.models import Form, Submission, SubmissionCount, SubmissionDayCount
from formsapi.submission import repository as submission_repository
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org

WRITE = ["forms:read", "submissions:read", "submissions:write"]


@pytest.fixture
def settings(database_url: str) -> Settings:
    # Hundreds of requests from one test client: the limit is not what is tested here.
    return Settings(database_url=database_url, rate_limit_standard=100_000)


GOOD = {"name": "Ada", "email": "ada@example.com", "age": 36, "colors": "blue,red"}


async def _form(session: AsyncSession, status: str = "published") -> tuple[str, str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org, status=status)
    await session.commit()
    return org.id, form.id, secret


async def test_a_submission_is_stored_and_read_back(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)

    response = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})

    assert response.status_code == 201
    created = response.json()
    assert created["id"].startswith("sub_")
    assert created["formId"] == form_id
    assert created["formVersion"] == 1
    assert created["submittedAt"].endswith("Z")
    assert created["answers"] == {**GOOD, "colors": "red,blue"}  # stored in option order
    assert response.headers["location"] == f"/v1/forms/{form_id}/submissions/{created['id']}"
    one = (await api.get(response.headers["location"], secret)).json()
    page = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert one == created
    assert created["version"] == 1
    assert created["updatedAt"] == created["submittedAt"]
    assert created["changeSeq"] == form["changeSeq"] == 1
    assert created["language"] == "en"  # the form's own: the post named none
    detail_only = ("updatedAt", "version", "changeSeq", "ending", "language")
    listed = {k: v for k, v in created.items() if k not in detail_only}
    assert page["data"] == [listed]  # the seed's list keeps its fields
    assert page["pagination"]["total"] == form["responseCount"] == 1


@pytest.mark.parametrize("status", ["draft", "closed", "archived"])
async def test_only_published_forms_take_submissions(
    api: Api, session: AsyncSession, status: str
) -> None:
    _, form_id, secret = await _form(session, status)

    response = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})

    assert response.status_code == 409
    assert response.json()["formStatus"] == status
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_invalid_answers_list_every_error_and_store_nothing(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session)

    response = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"email": "nope", "age": 200, "colors": "green", "shoe": 42}},
    )

    assert response.status_code == 422
    errors = {e["pointer"]: e["detail"] for e in response.json()["errors"]}
    assert set(errors) == {
        "/answers/name",
        "/answers/email",
        "/answers/age",
        "/answers/colors",
        "/answers/shoe",
    }
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_answers_must_be_an_object(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)

    for body in ({"answers": [1]}, {}, {"answers": GOOD, "extra": 1}):
        response = await api.post(f"/v1/forms/{form_id}/submissions", secret, json=body)
        assert response.status_code == 422, body


async def test_deleting_a_submission_updates_every_total(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)
    ids = [
        (await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})).json()[
            "id"
        ]
        for _ in range(3)
    ]

    deleted = await api.delete(f"/v1/forms/{form_id}/submissions/{ids[1]}", secret)
    again = await api.delete(f"/v1/forms/{form_id}/submissions/{ids[1]}", secret)
    since = (await api.get(f"/v1/forms/{form_id}/submissions?since=2000-01-01", secret)).json()

    assert deleted.status_code == 204
    assert again.status_code == 404
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 2
    assert since["pagination"]["total"] == 2
    assert sorted(s["id"] for s in since["data"]) == sorted([ids[0], ids[2]])


async def test_other_organizations_submissions_read_as_missing(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session)
    _, _, other = await _form(session)
    created = (
        await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})
    ).json()
    path = f"/v1/forms/{form_id}/submissions/{created['id']}"

    for response in (
        await api.get(path, other),
        await api.delete(path, other),
        await api.post(f"/v1/forms/{form_id}/submissions", other, json={"answers": GOOD}),
    ):
        assert response.status_code == 404
    assert (await api.get(path, secret)).status_code == 200


async def test_a_retry_with_the_same_idempotency_key_creates_nothing_new(
    api: Api, session: AsyncSession
) -> None:
    _, form_id, secret = await _form(session)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    url = f"/v1/forms/{form_id}/submissions"

    first = await api.post(url, secret, json={"answers": GOOD}, headers=key)
    retry = await api.post(
        url, secret, json={"answers": dict(reversed(GOOD.items()))}, headers=key
    )  # same body, other key order
    other_body = await api.post(url, secret, json={"answers": {**GOOD, "age": 37}}, headers=key)

    assert first.status_code == retry.status_code == 201
    assert retry.json() == first.json()
    assert retry.headers["location"] == first.headers["location"]
    assert other_body.status_code == 422
    assert other_body.json()["type"] == "/problems/idempotency-key-reused"
    assert (await api.get(url, secret)).json()["pagination"]["total"] == 1


async def test_a_failed_request_does_not_use_up_its_key(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)
    key = {"Idempotency-Key": "retry-me"}
    url = f"/v1/forms/{form_id}/submissions"

    failed = await api.post(url, secret, json={"answers": {"name": "Ada"}}, headers=key)
    fixed = await api.post(url, secret, json={"answers": {"name": "Ada"}}, headers=key)

    assert failed.status_code == fixed.status_code == 422  # same body, same (unsaved) error
    assert (
        await api.post(url, secret, json={"answers": GOOD}, headers={"Idempotency-Key": "retry-me"})
    ).status_code == 201


@pytest.mark.parametrize("same_body", [True, False])
async def test_an_expired_idempotency_key_is_taken_over_by_a_new_request(
    api: Api, session: AsyncSession, same_body: bool
) -> None:
    _, form_id, secret = await _form(session)
    key = {"Idempotency-Key": "reused-a-day-later"}
    url = f"/v1/forms/{form_id}/submissions"
    first = await api.post(url, secret, json={"answers": GOOD}, headers=key)

    with shift(RETENTION + timedelta(minutes=1)):
        later = await api.post(
            url, secret, json={"answers": GOOD if same_body else {**GOOD, "age": 37}}, headers=key
        )
        retry = await api.post(
            url, secret, json={"answers": GOOD if same_body else {**GOOD, "age": 37}}, headers=key
        )

    assert first.status_code == later.status_code == retry.status_code == 201
    assert later.json()["id"] != first.json()["id"]  # a new request, not a replay of the old
    assert retry.json() == later.json()  # and the key now answers for the new one
    assert (await api.get(url, secret)).json()["pagination"]["total"] == 2


async def test_writing_submissions_needs_the_scope(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, reader = await create_key(session, org)
    form = await create_form(session, org)
    await session.commit()

    response = await api.post(f"/v1/forms/{form.id}/submissions", reader, json={"answers": GOOD})

    assert response.status_code == 403
    assert response.json()["requiredScope"] == "submissions:write"


# PostgreSQL's to prove: SQLite runs one writer at a time.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_counts_stay_exact_under_concurrent_posts_and_deletes(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"

    async def post() -> str:
        response = await api.post(url, secret, json={"answers": GOOD})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    first = await asyncio.gather(*(post() for _ in range(40)))
    results = await asyncio.gather(
        *(post() for _ in range(160)),
        *(api.delete(f"{url}/{sid}", secret) for sid in first[:25]),
    )
    assert all(isinstance(r, httpx.Response) and r.status_code == 204 for r in results[160:])

    rows = await session.scalar(
        select(func.count())
        .select_from(Submission)
        .where(scoped(Submission, org_id), Submission.form_id == form_id)
    )
    counted = await session.scalar(
        select(Form.response_count).where(scoped(Form, org_id), Form.id == form_id)
    )
    hourly = await session.scalar(
        select(func.sum(SubmissionCount.count)).where(
            scoped(SubmissionCount, org_id), SubmissionCount.form_id == form_id
        )
    )
    daily = await session.scalar(
        select(func.sum(SubmissionDayCount.count)).where(
            scoped(SubmissionDayCount, org_id), SubmissionDayCount.form_id == form_id
        )
    )
    listed = (await api.get(url, secret)).json()["pagination"]["total"]
    assert rows == counted == hourly == daily == listed == 200 - 25
    assert org_id


@pytest.mark.parametrize(
    ("age", "status"),
    [(b"NaN", 400), (b"Infinity", 400), (b"1e400", 400), (b"100000000000000000000000000", 422)],
)
async def test_numbers_json_cannot_carry_are_refused_not_stored(
    api: Api, session: AsyncSession, age: bytes, status: int
) -> None:
    _, form_id, secret = await _form(session)
    raw = b'{"answers": {"name": "Ada", "colors": "red", "age": ' + age + b"}}"

    response = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        content=raw,
        headers={"Content-Type": "application/json"},
    )

    # Not JSON at all (400), or JSON whose number no double holds exactly (422).
    assert response.status_code == status, response.text
    if status == 422:
        assert [e["pointer"] for e in response.json()["errors"]] == ["/answers/age"]
    assert (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"] == []


async def test_text_postgresql_cannot_store_is_refused(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}/submissions"

    nul = await api.post(
        url,
        secret,
        content=b'{"answers": {"name": "A\\u0000a"}}',
        headers={"Content-Type": "application/json"},
    )
    assert nul.status_code == 422, nul.text
    surrogate = await api.post(
        url,
        secret,
        content=b'{"answers": {"name": "A\\ud800"}}',
        headers={"Content-Type": "application/json"},
    )
    assert surrogate.status_code == 400, surrogate.text  # not I-JSON
    org = await create_org(session)
    _, forms_writer = await create_key(session, org, scopes=["forms:write"])
    await session.commit()
    for raw, status in ((b'{"title": "Nul\\u0000"}', 422), (b'{"title": "Half \\ud800"}', 400)):
        created = await api.post(
            "/v1/forms", forms_writer, content=raw, headers={"Content-Type": "application/json"}
        )
        assert created.status_code == status, created.text  # never a 500


async def test_counts_added_for_many_hours_at_once_land_in_their_days(
    session: AsyncSession,
) -> None:
    # Bulk loaders (the demo) add a whole history in one call: several hours
    # of one day must add up in that day, not collide.
    org = await create_org(session)
    form = await create_form(session, org)
    day = datetime(2026, 3, 1, tzinfo=UTC)
    hours = {day + timedelta(hours=h): n for h, n in [(0, 2), (5, 3), (23, 4), (24, 5), (30, 1)]}

    await submission_repository.add_counts(session, org.id, form.id, hours)
    await submission_repository.add_counts(session, org.id, form.id, {day + timedelta(hours=5): -1})
    rows = await session.execute(
        select(SubmissionDayCount.day, SubmissionDayCount.count)
        .where(scoped(SubmissionDayCount, org.id), SubmissionDayCount.form_id == form.id)
        .order_by(SubmissionDayCount.day)
    )

    assert [tuple(row) for row in rows] == [(day, 8), (day + timedelta(days=1), 6)]
