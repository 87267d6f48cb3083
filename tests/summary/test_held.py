"""A form held in memory for filtered summaries (summary/held.py) while its
submissions change under the read: each page of the change feed applied,
then posts, edits and deletes made between pages, then the rest. The
figures must be those the database counts at the same moment."""

import asyncio
import random
from collections import Counter
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db.session import create_read_sessionmaker
from formsapi.form import service as form_service
from formsapi.language.compiled import Compiled
from formsapi.submission import repository as submission_repository
from formsapi.submission.repository.tallies import tally
from formsapi.summary import held, repository, service
from formsapi.summary.figures import Tallies
from formsapi.summary.repository import AnswerIs, Filters
from tests.conftest import Api
from tests.summary.calls import calls_to
from tests.summary.test_summary import FORM as EVERY_QUESTION
from tests.summary.test_summary import _answers, _export
from tests.support.factories import publish_over_api
from tests.support.locks import LOCK_SUBMISSIONS, statement_waiting_on_a_lock

OPTIONS = [{"value": v, "label": v} for v in ("free", "team", "business")]
FORM = {
    "title": "Plans",
    "blocks": [{"type": "single_choice", "key": "plan", "title": "Plan", "options": OPTIONS}],
}
TEAM = Filters(answer=AnswerIs("plan", "team"))


async def _held_and_counted(
    engine: AsyncEngine, rows: held._Rows, organization_id: str, form_id: str
) -> tuple[Tallies, Tallies]:
    async with create_read_sessionmaker(engine)() as session:
        assert await held._follow(session, rows, organization_id, form_id, 2**30, pages=100)
        counted = await repository.tallies(session, organization_id, form_id, TEAM, rows.counted)
    mask = rows.matching("plan", lambda value: value == "team")
    assert mask is not None
    return await rows.count(TEAM, [mask]), counted


async def _posted(
    api: Api, session: AsyncSession, engine: AsyncEngine, plans: list[str]
) -> tuple[str, str, Compiled]:
    """A form of FORM with a submission of each plan: its organization, id
    and current version."""
    form_id, secret, organization_id = await publish_over_api(api, session, FORM)
    for plan in plans:
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": plan}}
        )
        assert posted.status_code == 201, posted.text
    async with create_read_sessionmaker(engine)() as read:
        form = await form_service.get(read, organization_id, form_id)
        return organization_id, form_id, await service._version(read, form, None)


async def test_a_form_read_page_by_page_while_it_changes_is_counted_exactly(
    api: Api, session: AsyncSession, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    form_id, secret, organization_id = await publish_over_api(api, session, FORM)
    path = f"/v1/forms/{form_id}/submissions"
    ids = []
    for plan in ("team", "team", "free", "team", "business"):
        posted = await api.post(path, secret, json={"answers": {"plan": plan}})
        ids.append(posted.json()["id"])
    async with create_read_sessionmaker(engine)() as read:
        form = await form_service.get(read, organization_id, form_id)
        shown = await service._version(read, form, None)
    rows = held._Rows(counted=shown.counted, hidden=frozenset())
    monkeypatch.setattr(held, "PAGE", 1)
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")

    async with create_read_sessionmaker(engine)() as read:  # the first two posts
        assert not await held._follow(read, rows, organization_id, form_id, 2**30, pages=2)
    assert len(feed_reads) == 2  # none read ahead past the pages allowed
    # Between pages: an edit of one read, of one not read yet, a delete of
    # one read and of one not read, a new post.
    await api.patch(f"{path}/{ids[0]}", secret, json={"answers": {"plan": "free"}})
    await api.patch(f"{path}/{ids[2]}", secret, json={"answers": {"plan": "team"}})
    await api.delete(f"{path}/{ids[1]}", secret)
    await api.delete(f"{path}/{ids[3]}", secret)
    await api.post(path, secret, json={"answers": {"plan": "team"}})
    found, counted = await _held_and_counted(engine, rows, organization_id, form_id)

    assert found == counted
    assert found.submissions == 2  # ids[2], now team, and the new post
    # And again once more changes come, as an ask catches up.
    await api.patch(f"{path}/{ids[2]}", secret, json={"answers": {"plan": "business"}})
    await api.delete(f"{path}/{ids[4]}", secret)
    found, counted = await _held_and_counted(engine, rows, organization_id, form_id)
    assert found == counted
    assert found.submissions == 1


async def test_the_copy_holds_each_submission_as_the_kept_counts_tally_it(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    """held.py encodes answers itself (by value, remembered) for speed: its
    pairs must stay those of tallies.tally, which the kept counts use."""
    form_id, secret, organization_id = await publish_over_api(api, session, EVERY_QUESTION)
    rng = random.Random(7)  # noqa: S311 - reproducible answers
    path = f"/v1/forms/{form_id}/submissions"
    for _ in range(30):
        posted = await api.post(path, secret, json={"answers": _answers(rng)})
        assert posted.status_code == 201, posted.text
    async with create_read_sessionmaker(engine)() as read:
        form = await form_service.get(read, organization_id, form_id)
        shown = await service._version(read, form, None)
        rows = held._Rows(counted=shown.counted, hidden=service._hidden_keys(shown))
        assert await held._follow(read, rows, organization_id, form_id, 2**30, pages=100)
    exported = await _export(api, form_id, secret)

    expected: Counter[tuple[str, str]] = Counter()
    for row in exported:
        expected.update(tally(rows.held, row["answers"], row["ending"]))
    found = Counter({pair: len(slots) for pair, slots in zip(rows.pairs, rows.slots, strict=True)})

    assert len(exported) == 30
    assert found == expected


async def test_a_read_stopped_mid_statement_returns_its_connection(
    api: Api, session: AsyncSession, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shutdown stops a form being read: its pooled connection must go back to
    # the pool, not be left to the garbage collector (found by the suite's
    # leak check at a test's teardown).
    organization_id, form_id, shown = await _posted(
        api, session, engine, ["team", "free", "team", "business"]
    )
    monkeypatch.setattr(held, "PAGE", 1)
    holder = held.Held(2**30)
    for turns in range(1, 8):  # stopped after more and more turns of the loop
        async with create_read_sessionmaker(engine)() as read:
            holder.read(read, organization_id, form_id, shown.counted, frozenset())
        for _ in range(turns):
            await asyncio.sleep(0)
        await holder.stop()
        assert engine.pool.checkedout() == 0, turns  # type: ignore[attr-defined]
        assert holder.copy_of(form_id) is None  # stopped before its last page


async def test_a_read_told_to_stop_reads_no_page_past_the_one_it_is_on(
    api: Api, session: AsyncSession, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages are read a step ahead while one is applied; a read stopped at
    # shutdown must end after its page, not after one more statement.
    organization_id, form_id, shown = await _posted(
        api, session, engine, ["team", "free", "business"]
    )
    rows = held._Rows(counted=shown.counted, hidden=frozenset())
    monkeypatch.setattr(held, "PAGE", 1)
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")

    async with create_read_sessionmaker(engine)() as read:
        kept = await held._follow(
            read, rows, organization_id, form_id, 2**30, pages=100, stopped=lambda: True
        )

    assert not kept
    assert len(feed_reads) == 1
    assert rows.seq  # the page it was on was applied


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_read_cancelled_between_pages_ends_though_the_database_stopped_answering(
    api: Api, session: AsyncSession, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The next page's statement waits in the database (on a lock another
    # connection holds) when shutdown cancels the read at its yield between
    # pages: the cancel must reach that statement, or the read waits for an
    # answer that never comes, and shutdown with it.
    organization_id, form_id, shown = await _posted(
        api, session, engine, ["team", "free", "business"]
    )
    monkeypatch.setattr(held, "PAGE", 1)
    real_page, real_sleep = submission_repository.changes_after, asyncio.sleep
    asked: list[int] = []  # the page statements sent
    cut: list[int] = []  # the read cancelled at its yield
    reading: asyncio.Task[None] | None = None

    async with engine.connect() as locker:
        await locker.exec_driver_sql("SET LOCAL lock_timeout = '5s'")

        async def page_of_a_quiet_database(*args: Any, **kwargs: Any) -> Any:
            asked.append(1)
            if len(asked) > 1:  # the pages after the first get no answer
                await locker.exec_driver_sql(LOCK_SUBMISSIONS)
            return await real_page(*args, **kwargs)

        async def yield_between_pages(delay: float, *args: Any) -> Any:
            # The read's first yield: the next page asked for, not yet sent.
            if asyncio.current_task() is reading and reading is not None and not cut:
                cut.append(1)
                await statement_waiting_on_a_lock(engine, real_sleep)
                reading.cancel()  # lands on the sleep below: the read's yield
            return await real_sleep(delay, *args)

        monkeypatch.setattr(submission_repository, "changes_after", page_of_a_quiet_database)
        monkeypatch.setattr(asyncio, "sleep", yield_between_pages)
        holder = held.Held(2**30)
        async with create_read_sessionmaker(engine)() as read:
            holder.read(read, organization_id, form_id, shown.counted, frozenset())
            reading = holder._reading
        assert reading is not None
        ended, _ = await asyncio.wait([reading], timeout=30)
        await locker.rollback()
        if not ended:  # answered now: it ends before the engine serves the next test
            await asyncio.wait([reading], timeout=30)

    assert len(asked) == 2  # the first page, and the next, which got no answer
    assert cut
    assert ended
    assert reading.cancelled()
    assert holder.copy_of(form_id) is None
