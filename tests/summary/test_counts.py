"""The answer counts summaries add up are kept exact by every write to a
form's submissions (a post alone or batched, with a key, an edit, a delete, a
new version), equal to a count made again from the rows; and a database that
had submissions before the counts began has them counted by `migrate`."""

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.db.engine import create_engine
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from formsapi.models import AnswerCount
from formsapi.submission import service as submission_service
from formsapi.tenancy import scoped
from tests.conftest import Api, scratch_postgres
from tests.support.factories import publish_over_api
from tests.support.servers import cli
from tests.test_migrations import _insert

FORM: dict[str, Any] = {
    "title": "Counted",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Name"},
        {"type": "single_choice", "key": "plan", "title": "Plan", "options": [
            {"value": "free", "label": "Free"}, {"value": "team", "label": "Team"}]},
        {"type": "multiple_choice", "key": "tags", "title": "Tags", "options": [
            {"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
        {"type": "rating", "key": "stars", "title": "Stars"},
        {"type": "matrix", "key": "grid", "title": "Grid",
         "rows": [{"value": "x", "label": "X"}, {"value": "y", "label": "Y"}],
         "columns": [{"value": "lo", "label": "Lo"}, {"value": "hi", "label": "Hi"}]},
    ],
    "variables": [{"name": "points", "value": {"*": [{"var": "stars"}, 10]}}],
    "endings": [{"key": "bye", "title": "Bye"}],
}  # fmt: skip

Rows = dict[tuple[str, str, datetime, int, str, str], int]


async def _kept(session: AsyncSession, organization_id: str) -> Rows:
    """The organization's answer counts, those at zero left out."""
    rows = await session.execute(
        select(
            AnswerCount.form_id,
            AnswerCount.period,
            AnswerCount.start,
            AnswerCount.form_version,
            AnswerCount.key,
            AnswerCount.value,
            AnswerCount.count,
        ).where(scoped(AnswerCount, organization_id))
    )
    return {tuple(row[:6]): row[6] for row in rows if row[6]}  # type: ignore[misc]


async def test_kept_counts_equal_a_recount_after_every_kind_of_write(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, organization_id = await publish_over_api(api, session, FORM)
    path = f"/v1/forms/{form_id}/submissions"
    answers = [
        {"name": "Ada", "plan": "free", "tags": "a,b", "stars": 5, "grid.x": "hi"},
        {"plan": "team", "stars": 2, "grid.y": "lo"},
        {"name": "Bo", "tags": "b"},
    ]
    together = await asyncio.gather(
        *(api.post(path, secret, json={"answers": a}) for a in answers * 3)
    )
    keyed = await api.post(
        path, secret, json={"answers": answers[0]}, headers={"Idempotency-Key": "k-1"}
    )
    ids = [r.json()["id"] for r in [*together, keyed]]
    assert all(r.status_code == 201 for r in [*together, keyed])
    edited = await api.patch(
        f"{path}/{ids[0]}", secret, json={"answers": {"plan": None, "stars": 1}}
    )
    assert edited.status_code == 200, edited.text
    for gone in ids[4:6]:
        assert (await api.delete(f"{path}/{gone}", secret)).status_code == 204
    more = [*FORM["blocks"], {"type": "yes_no", "key": "again", "title": "Again?"}]
    assert (await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": more})).json()[
        "version"
    ] == 2
    later = await api.post(path, secret, json={"answers": {"plan": "free", "again": "yes"}})
    assert later.status_code == 201, later.text

    kept = await _kept(session, organization_id)
    await submission_service.recount_answers(session, organization_id)
    recounted = await _kept(session, organization_id)
    await session.rollback()

    assert kept == recounted
    totals = {(k[3], k[4], k[5]): n for k, n in kept.items() if k[1] == "t"}
    assert totals[1, "plan", '"free"'] == 3  # four posted, one edited away
    assert totals[1, "#ending", '"bye"'] == 8
    assert totals[2, "again", '"yes"'] == 1
    assert totals[1, "grid", ""] == 6  # the matrix: either row answered


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'before.db'}"
        return
    with scratch_postgres(request.getfixturevalue("postgres_url")) as url:
        yield url


def test_migrate_counts_the_answers_stored_before_the_counts_began(
    empty_database: str, tmp_path: Path
) -> None:
    database_url = empty_database
    at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    migrate(database_url, "0020")
    blocks = orjson.dumps(FORM["blocks"][:2]).decode()
    asyncio.run(
        _insert(
            database_url,
            ("organizations", {"id": "org_1", "name": "Org", "plan": "standard", "created_at": at}),
            (
                "forms",
                {
                    "id": "frm_1",
                    "organization_id": "org_1",
                    "title": "F",
                    "slug": "f",
                    "status": "published",
                    "version": 1,
                    "blocks": blocks,
                    "response_count": 3,
                    "change_seq": 3,
                    "created_at": at,
                    "updated_at": at,
                },
            ),
            (
                "form_versions",
                {
                    "organization_id": "org_1",
                    "form_id": "frm_1",
                    "version": 1,
                    "title": "F",
                    "blocks": blocks,
                    "created_at": at,
                },
            ),
            *(
                (
                    "submissions",
                    {
                        "id": f"sub_{i}",
                        "organization_id": "org_1",
                        "form_id": "frm_1",
                        "form_version": 1,
                        "submitted_at": at,
                        "answers": orjson.dumps(a).decode(),
                        "change_seq": i,
                        "version": 1,
                    },
                )
                for i, a in enumerate(
                    [{"name": "Ada", "plan": "free"}, {"plan": "free"}, {"plan": "team"}], 1
                )
            ),
        )
    )

    cli(tmp_path, database_url, "migrate")

    async def totals() -> dict[tuple[str, str], int]:
        engine = create_engine(database_url)
        async with create_sessionmaker(engine)() as session:
            kept = await _kept(session, "org_1")
        await engine.dispose()
        return {(k[4], k[5]): n for k, n in kept.items() if k[1] == "t"}

    assert asyncio.run(totals()) == {
        ("name", ""): 1,
        ("plan", '"free"'): 2,
        ("plan", '"team"'): 1,
        ("#ending", "null"): 3,
    }
