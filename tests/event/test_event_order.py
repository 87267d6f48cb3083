"""The order the events list promises, under concurrent writers: a form's
submission events in `changeSeq` order, and a submission's in its version
order, whatever else the list interleaves."""

import asyncio
import random
import uuid
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.support.settled import events_settled

SCOPES = ["forms:read", "submissions:read", "submissions:write", "events:read"]
GOOD = {"name": "Ada", "colors": "red"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=1_000_000)


async def _writer(api: Api, secret: str, form_id: str, seed: int) -> None:
    """Posts (with and without an Idempotency-Key), edits and deletes of one form."""
    chance = random.Random(seed)  # noqa: S311 - a test's mix of writes
    url = f"/v1/forms/{form_id}/submissions"
    mine: list[str] = []
    for step in range(40):
        roll = chance.random()
        if roll < 0.5 or not mine:
            headers = {"Idempotency-Key": str(uuid.uuid4())} if step % 2 else {}
            answers = {**GOOD, "name": f"w{seed}-{step}"}
            response = await api.post(url, secret, json={"answers": answers}, headers=headers)
            assert response.status_code == 201, response.text
            mine.append(response.json()["id"])
        elif roll < 0.85:
            headers = {"Idempotency-Key": str(uuid.uuid4())} if step % 2 else {}
            edit = {"answers": {"name": f"e{seed}-{step}"}}
            response = await api.patch(
                f"{url}/{chance.choice(mine)}", secret, json=edit, headers=headers
            )
            assert response.status_code in (200, 404), response.text
        else:
            gone = mine.pop(chance.randrange(len(mine)))
            assert (await api.delete(f"{url}/{gone}", secret)).status_code == 204


async def _all_events(api: Api, secret: str) -> list[dict[str, Any]]:
    await events_settled(api.settings.database_url.get_secret_value())
    events: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        page = (await api.get("/v1/events", secret, params=params)).json()
        events += page["data"]
        if not page["hasMore"]:
            return events
        params["after"] = page["next"]


async def test_a_forms_events_are_listed_in_change_order(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    forms = [await create_form(session, org) for _ in range(2)]
    await session.commit()

    await asyncio.gather(
        *(_writer(api, secret, form.id, seed) for seed, form in enumerate(forms * 4))
    )

    events = [e for e in await _all_events(api, secret) if e["type"].startswith("submission.")]
    assert len(events) > 200
    last_change: dict[str, int] = {}
    last_version: dict[str, int] = {}
    for event in events:
        data = event["data"]
        form_id, change = data["formId"], data["changeSeq"]
        assert change > last_change.get(form_id, 0), (event, last_change[form_id])
        last_change[form_id] = change
        if "version" in data:
            assert data["version"] > last_version.get(data["id"], 0), event
            last_version[data["id"]] = data["version"]
