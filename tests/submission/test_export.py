"""The streamed export: every live submission in change order, and where it
stands in the change feed, so a copy made from it and the feed misses nothing."""

import re
from typing import Any

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_read_sessionmaker
from formsapi.submission import export
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org

WRITE = ["forms:read", "submissions:read", "submissions:write"]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


def _answers(name: str) -> dict[str, Any]:
    return {"name": name, "colors": "red"}


async def _form_with(
    api: Api, session: AsyncSession, count: int
) -> tuple[str, str, list[str], str]:
    """A form with `count` submissions: its id, a key, their ids, its organization."""
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=WRITE)
    form = await create_form(session, org)
    await session.commit()
    ids = []
    for i in range(count):
        created = await api.post(
            f"/v1/forms/{form.id}/submissions", secret, json={"answers": _answers(f"n{i}")}
        )
        ids.append(created.json()["id"])
    return form.id, secret, ids, org.id


def _lines(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in body.splitlines()]


async def test_ndjson_has_every_live_submission_in_change_order_then_an_end_line(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, (first, second, third), _ = await _form_with(api, session, 3)
    url = f"/v1/forms/{form_id}/submissions"
    edited = await api.patch(f"{url}/{first}", secret, json={"answers": {"name": "fixed"}})
    assert (await api.delete(f"{url}/{second}", secret)).status_code == 204

    response = await api.get(f"{url}/export", secret)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    assert response.headers["x-change-seq"] == "5"
    *rows, end = _lines(response.content)
    feed = (await api.get(f"{url}/changes", secret)).json()["data"]
    assert rows == [item for item in feed if not item.get("deleted")]
    assert [row["id"] for row in rows] == [third, first]
    assert rows[1] == edited.json()
    assert end == {"end": True, "changeSeq": 5, "count": 2}


async def test_an_empty_form_exports_its_end_line_alone(api: Api, session: AsyncSession) -> None:
    form_id, secret, _, _ = await _form_with(api, session, 0)

    response = await api.get(f"/v1/forms/{form_id}/submissions/export", secret)

    assert _lines(response.content) == [{"end": True, "changeSeq": 0, "count": 0}]


@pytest.mark.parametrize("count", [6, 7], ids=["chunk multiple", "partial last chunk"])
async def test_every_submission_comes_once_across_chunks(
    api: Api, session: AsyncSession, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.setattr(export, "CHUNK", 3)
    form_id, secret, ids, _ = await _form_with(api, session, count)
    url = f"/v1/forms/{form_id}/submissions/export"

    ndjson = _lines((await api.get(url, secret)).content)
    csv = (await api.get(url, secret, params={"format": "csv"})).text.splitlines()

    assert [row["id"] for row in ndjson[:-1]] == ids
    assert ndjson[-1]["count"] == count
    assert [line.split(",")[0] for line in csv[1:]] == ids


async def test_csv_has_the_settings_areas_columns_and_a_file_name(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, (only,), _ = await _form_with(api, session, 1)

    response = await api.get(
        f"/v1/forms/{form_id}/submissions/export", secret, params={"format": "csv"}
    )

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["x-change-seq"] == "1"
    assert re.fullmatch(
        r'attachment; filename="[a-z0-9-]+-submissions-\d{4}-\d{2}-\d{2}\.csv"',
        response.headers["content-disposition"],
    )
    header, row = response.text.lstrip("\ufeff").splitlines()
    assert header == "submission_id,submitted_at,form_version,name,email,age,colors"
    assert row.startswith(f"{only},")
    assert row.endswith(",1,n0,,,red")


async def test_a_missing_form_or_an_unknown_format_is_refused(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _, _ = await _form_with(api, session, 0)
    other_id, _, _, _ = await _form_with(api, session, 0)

    missing = await api.get("/v1/forms/frm_nope/submissions/export", secret)
    theirs = await api.get(f"/v1/forms/{other_id}/submissions/export", secret)
    unknown = await api.get(
        f"/v1/forms/{form_id}/submissions/export", secret, params={"format": "xlsx"}
    )

    assert missing.status_code == theirs.status_code == 404
    assert unknown.status_code == 400


async def test_an_export_and_the_feed_after_it_copy_a_form_changing_meanwhile(
    api: Api, session: AsyncSession, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two chunks of the export, submissions are created, edited and
    deleted, some already exported and some not; no connection is held while
    the export waits on its client."""
    monkeypatch.setattr(export, "CHUNK", 2)
    form_id, secret, ids, organization_id = await _form_with(api, session, 6)
    url = f"/v1/forms/{form_id}/submissions"
    upto = (await api.get(f"/v1/forms/{form_id}", secret)).json()["changeSeq"]
    sessionmaker = create_read_sessionmaker(engine)  # as the endpoint streams from

    copy: dict[str, dict[str, Any]] = {}
    chunks = export.ndjson_chunks(sessionmaker, organization_id, form_id, upto)
    async for chunk in chunks:
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        for line in _lines(chunk):
            if "end" not in line:
                copy[line["id"]] = line
        if len(copy) == 2:  # ids[0] and ids[1] exported, the rest not yet
            await api.patch(f"{url}/{ids[0]}", secret, json={"answers": {"name": "edited"}})
            await api.patch(f"{url}/{ids[4]}", secret, json={"answers": {"name": "edited"}})
            await api.delete(f"{url}/{ids[1]}", secret)
            await api.delete(f"{url}/{ids[3]}", secret)
            await api.post(url, secret, json={"answers": _answers("new")})
    feed = (await api.get(f"{url}/changes", secret, params={"after": upto})).json()
    for item in feed["data"]:
        if item.get("deleted"):
            copy.pop(item["id"], None)
        else:
            copy[item["id"]] = item

    everything = (await api.get(f"{url}/changes", secret)).json()["data"]
    assert copy == {item["id"]: item for item in everything if not item.get("deleted")}
    assert copy[ids[0]]["answers"]["name"] == copy[ids[4]]["answers"]["name"] == "edited"


@pytest.mark.usefixtures("whole_minute")  # counts read across a minute's edge are pro-rated
async def test_a_long_export_counts_once_against_the_rate_limit(
    api: Api, session: AsyncSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its chunks are reads of the service's own, not requests of the client's."""
    monkeypatch.setattr(export, "CHUNK", 2)
    form_id, secret, ids, _ = await _form_with(api, session, 7)
    url = f"/v1/forms/{form_id}/submissions"

    before = await api.get(url, secret, params={"limit": 1})
    exported = await api.get(f"{url}/export", secret)
    after = await api.get(url, secret, params={"limit": 1})

    assert len(_lines(exported.content)) == len(ids) + 1  # four chunks, then the end line
    remaining = [int(r.headers["ratelimit-remaining"]) for r in (before, exported, after)]
    assert remaining == [remaining[0], remaining[0] - 1, remaining[0] - 2]
