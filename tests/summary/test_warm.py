"""The largest forms held in memory before any ask (summary.service.warm), so
that their first filtered summary is counted from memory too; warming only
fills the room left, pushing no form out."""

import asyncio
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_read_sessionmaker
from formsapi.form import service as form_service
from formsapi.submission import repository as submission_repository
from formsapi.summary import held, repository, service
from tests.conftest import Api, app_on
from tests.summary.calls import calls_to
from tests.summary.test_held import FORM
from tests.support.factories import publish_over_api


async def _form_of(api: Api, session: AsyncSession, plans: list[str]) -> tuple[str, str, str]:
    form_id, secret, organization_id = await publish_over_api(api, session, FORM)
    for plan in plans:
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": plan}}
        )
        assert posted.status_code == 201, posted.text
    return form_id, secret, organization_id


@pytest.fixture
def holder(monkeypatch: pytest.MonkeyPatch) -> held.Held:
    holder = held.Held(2**30)
    monkeypatch.setattr(held, "HELD", holder)
    return holder


async def test_forms_with_enough_submissions_are_held_before_any_ask(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    holder: held.Held,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big, secret, _ = await _form_of(api, session, ["team", "free", "team"])
    small, _, _ = await _form_of(api, session, ["team", "business"])

    assert await service.warm(create_read_sessionmaker(engine), least=3) == 1

    assert holder.copy_of(big) is not None
    assert holder.copy_of(small) is None
    # The first filtered ask is counted from memory, not by the database.
    counted_by_database = calls_to(monkeypatch, repository, "tallies")
    got = await api.get(f"/v1/forms/{big}/summary", secret, params={"answer": "plan:team"})
    assert got.status_code == 200, got.text
    assert got.json()["submissions"] == 2
    assert counted_by_database == []
    # A second round finds it held: nothing read again.
    assert await service.warm(create_read_sessionmaker(engine), least=3) == 0


async def test_warming_fills_only_the_room_left_and_pushes_no_form_out(
    api: Api, session: AsyncSession, engine: AsyncEngine, holder: held.Held
) -> None:
    asked, _, organization_id = await _form_of(api, session, ["team", "free", "team"])
    other, _, _ = await _form_of(api, session, ["team", "business", "free", "free"])
    sessions = create_read_sessionmaker(engine)
    async with sessions() as read:
        service.prepare(read, await form_service.get(read, organization_id, asked))
    await holder.settled()
    copy = holder.copy_of(asked)
    assert copy is not None
    holder.capacity = copy.size + 100  # room for nothing more

    assert await service.warm(sessions, least=1) == 0

    assert holder.copy_of(asked) is copy
    assert holder.copy_of(other) is None
    # Once there is room, it is warmed, first in line to be dropped: nobody asked for it.
    holder.capacity = 2**30
    assert await service.warm(sessions, least=1) == 1
    assert holder.copy_of(asked) is copy
    assert [form_id for _, form_id in holder._forms] == [other, asked]


async def test_an_ask_s_read_goes_before_warming_goes_on(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    holder: held.Held,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big, _, _ = await _form_of(api, session, ["team", "free", "team", "free"])
    asked, secret, organization_id = await _form_of(api, session, ["team"])
    # The big form's read waits on its first page until let go.
    let_go = asyncio.Event()
    real = submission_repository.changes_after

    async def changes_after(*args: Any, **kwargs: Any) -> Any:
        if args[2] == big:
            await let_go.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(submission_repository, "changes_after", changes_after)
    warming = asyncio.create_task(service.warm(create_read_sessionmaker(engine), least=4))
    try:
        for _ in range(500):
            if holder._reading is not None:
                break
            await asyncio.sleep(0.01)
        # Asked while the big form is being read: counted by the database, and read next.
        got = await api.get(f"/v1/forms/{asked}/summary", secret, params={"answer": "plan:team"})
        assert got.status_code == 200, got.text
        assert got.json()["submissions"] == 1
        assert holder._next is not None
        assert holder._next[1] == (organization_id, asked)
    finally:
        let_go.set()

    assert await warming == 1
    await holder.settled()
    assert holder.copy_of(big) is not None
    assert holder.copy_of(asked) is not None


async def test_a_warmed_form_is_brought_up_to_date_each_round_where_it_stands(
    api: Api, session: AsyncSession, engine: AsyncEngine, holder: held.Held
) -> None:
    form_id, secret, _ = await _form_of(api, session, ["team", "free"])
    asked, _, asked_organization = await _form_of(api, session, ["team"])
    sessions = create_read_sessionmaker(engine)
    async with sessions() as read:
        service.prepare(read, await form_service.get(read, asked_organization, asked))
    await holder.settled()
    assert await service.warm(sessions, least=2) == 1
    copy = holder.copy_of(form_id)
    assert copy is not None
    for plan in ("business", "team"):
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": plan}}
        )
        assert posted.status_code == 201, posted.text

    assert await service.warm(sessions, least=2) == 0  # held: caught up, not read again

    assert holder.copy_of(form_id) is copy
    assert len(copy.live) == 4
    assert copy.seq == 4
    # Still the first to be dropped: warming's catch-up is not an ask.
    assert [held_id for _, held_id in holder._forms] == [form_id, asked]


async def test_a_serving_process_warms_its_largest_forms_when_it_starts(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings, holder: held.Held
) -> None:
    big, _, _ = await _form_of(api, session, ["team", "free"])
    app = app_on(engine, settings.model_copy(update={"summary_warm_from": 2}))
    async with app.router.lifespan_context(app):  # its end releases the app
        for _ in range(200):
            if holder.copy_of(big) is not None:
                break
            await asyncio.sleep(0.05)
        assert holder.copy_of(big) is not None


async def test_a_form_too_big_for_the_room_is_not_read(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    holder: held.Held,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its kept count alone rules it out: none of its submissions is read.
    form_id, _, _ = await _form_of(api, session, ["team", "free", "business"])
    holder.capacity = 3 * held._SLOT_BYTES - 1
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")

    assert await service.warm(create_read_sessionmaker(engine), least=1) == 0

    assert feed_reads == []
    assert holder.copy_of(form_id) is None
