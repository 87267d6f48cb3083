"""Held forms kept on disk (summary/stored.py): a new process holds a warmed
form again from its file and the changes since, and counts exactly what
the database counts; a file the database no longer numbers alike, a damaged
one, or one of other questions is not used; what a delete or an edit
removed leaves the disk at the next warming round."""

import asyncio
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_read_sessionmaker
from formsapi.form import service as form_service
from formsapi.submission import repository as submission_repository
from formsapi.summary import held, repository, service, stored
from tests.conftest import Api, app_on
from tests.summary.calls import calls_to
from tests.summary.test_summary import FORM as EVERY_QUESTION
from tests.summary.test_summary import _answers
from tests.support.factories import publish_over_api

FILTERS = [{"answer": "plan:team"}, {"hidden": "utm_source:newsletter"}, {"answer": "features:sso"}]


def _files(directory: Path, form_id: str = "*") -> list[Path]:
    """The forms' files stored in `directory` (a glob of form ids)."""
    return sorted(directory.glob(f"*.{form_id}.held"))


def _name_of(directory: Path, form_id: str) -> stored.Name:
    """The (organization, form) a stored file is named by."""
    (path,) = _files(directory, form_id)
    organization_id, stored_form, _ = path.name.split(".")
    return organization_id, stored_form


def _process(monkeypatch: pytest.MonkeyPatch, directory: Path | None) -> held.Held:
    """This process's held forms as a new process starts with them: none in
    memory, and what `directory` stores."""
    holder = held.Held(2**30, stored.Store(directory))
    monkeypatch.setattr(held, "HELD", holder)
    return holder


async def _posted(
    api: Api, session: AsyncSession, count: int, seed: int = 11
) -> tuple[str, str, list[str]]:
    form_id, secret, _ = await publish_over_api(api, session, EVERY_QUESTION)
    rng = random.Random(seed)  # noqa: S311 - reproducible answers
    ids = []
    for _ in range(count):
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": _answers(rng)}
        )
        assert posted.status_code == 201, posted.text
        ids.append(posted.json()["id"])
    return form_id, secret, ids


async def _warmed(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    directory: Path,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
) -> tuple[str, str, list[str]]:
    """A form of `count` submissions, warmed and stored in `directory` by a
    process before this test's."""
    form_id, secret, ids = await _posted(api, session, count)
    _process(monkeypatch, directory)
    assert await service.warm(create_read_sessionmaker(engine), least=count) == 1
    assert len(_files(directory, form_id)) == 1
    return form_id, secret, ids


async def _summaries(api: Api, form_id: str, secret: str) -> list[dict[str, Any]]:
    found = []
    for params in FILTERS:
        service.MADE.clear()
        got = await api.get(f"/v1/forms/{form_id}/summary", secret, params=params)
        assert got.status_code == 200, got.text
        found.append(got.json())
    return found


async def _by_database(
    api: Api, form_id: str, secret: str, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    monkeypatch.setattr(held, "HELD", held.Held(0))
    return await _summaries(api, form_id, secret)


async def test_a_new_process_holds_a_warmed_form_from_its_file_and_the_changes_since(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, secret, ids = await _warmed(api, session, engine, tmp_path, monkeypatch, 30)
    # Changes after it was stored: posts, edits and deletes.
    path = f"/v1/forms/{form_id}/submissions"
    rng = random.Random(12)  # noqa: S311
    for submission_id in ids[:3]:
        changed = {"nps": 3, "stars": 5, "utm_source": "newsletter", "features": "sso"}
        edited = await api.patch(f"{path}/{submission_id}", secret, json={"answers": changed})
        assert edited.status_code == 200, edited.text
    for submission_id in ids[3:6]:
        assert (await api.delete(f"{path}/{submission_id}", secret)).status_code == 204
    for _ in range(4):
        assert (await api.post(path, secret, json={"answers": _answers(rng)})).status_code == 201

    holder = _process(monkeypatch, tmp_path)
    counted_by_database = calls_to(monkeypatch, repository, "tallies")
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")
    found = await _summaries(api, form_id, secret)

    assert counted_by_database == []
    copy = holder.copy_of(form_id)
    assert copy is not None
    # Read from the file's last change on, not from the form's first.
    assert min(call[3] for call in feed_reads) >= 29
    assert found == await _by_database(api, form_id, secret, monkeypatch)


async def test_what_deletes_and_edits_removed_leaves_the_file_at_the_next_round(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, EVERY_QUESTION)
    path = f"/v1/forms/{form_id}/submissions"
    ids = []
    for source in ("leaked-campaign", "edited-away", "kept-campaign", "newsletter"):
        posted = await api.post(path, secret, json={"answers": {"utm_source": source}})
        ids.append(posted.json()["id"])
    holder = _process(monkeypatch, tmp_path)
    sessions = create_read_sessionmaker(engine)
    assert await service.warm(sessions, least=4) == 1
    (image,) = _files(tmp_path)
    assert b"leaked-campaign" in image.read_bytes()

    assert (await api.delete(f"{path}/{ids[0]}", secret)).status_code == 204
    edited = await api.patch(
        f"{path}/{ids[1]}", secret, json={"answers": {"utm_source": "newsletter"}}
    )
    assert edited.status_code == 200, edited.text
    await service.warm(sessions, least=3)

    written = image.read_bytes()
    assert b"leaked-campaign" not in written
    assert b"edited-away" not in written
    assert b"kept-campaign" in written
    loaded = holder.store.load(holder._forms.popitem()[0])
    assert loaded is not None
    assert len(loaded.hashes) == 3  # the deleted and the replaced slots left out


async def test_a_file_the_database_numbers_otherwise_is_not_used(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As after a restore from a backup: another history up to the same
    change number. Here, another form's file in this one's name."""
    form_id, secret, _ = await _posted(api, session, 12)
    other, _, _ = await _posted(api, session, 13, seed=13)
    _process(monkeypatch, tmp_path)
    assert await service.warm(create_read_sessionmaker(engine), least=12) == 2
    (mine,) = _files(tmp_path, form_id)
    (theirs,) = _files(tmp_path, other)
    os.replace(theirs, mine)

    holder = _process(monkeypatch, tmp_path)
    found = await _summaries(api, form_id, secret)
    await holder.settled()  # read from the database after all

    copy = holder.copy_of(form_id)
    assert copy is not None
    assert len(copy.live) == 12  # its own 12, not the other form's 13
    assert found == await _by_database(api, form_id, secret, monkeypatch)
    assert _files(tmp_path, form_id) == []  # removed: warming stores the form again


async def test_a_file_claiming_changes_the_database_numbers_otherwise_is_not_used(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As after a restore from a backup taken between deletes whose tombstones
    were then purged: the file says it knows changes past its last one. It
    is not used if the form has not reached that number, nor if a change
    the file says it knows is in the feed."""
    form_id, secret, _ = await _warmed(api, session, engine, tmp_path, monkeypatch, 10)
    holder = _process(monkeypatch, tmp_path)
    name = _name_of(tmp_path, form_id)
    image = holder.store.load(name)
    assert image is not None
    image.known = image.seq + 1  # past the form's last change
    assert holder.store.save(name, image)
    counted_by_database = calls_to(monkeypatch, repository, "tallies")

    assert (await _summaries(api, form_id, secret))[0] == (
        await _by_database(api, form_id, secret, monkeypatch)
    )[0]
    assert counted_by_database != []

    # A post takes the number the file claims to know.
    holder = _process(monkeypatch, tmp_path)
    assert holder.store.save(name, image)
    posted = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": "team"}}
    )
    assert posted.status_code == 201, posted.text
    counted_by_database.clear()
    found = await _summaries(api, form_id, secret)
    await holder.settled()

    assert counted_by_database != []
    assert found == await _by_database(api, form_id, secret, monkeypatch)


async def test_a_file_whose_last_change_was_replaced_is_read_again(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, secret, ids = await _warmed(api, session, engine, tmp_path, monkeypatch, 10)
    edited = await api.patch(
        f"/v1/forms/{form_id}/submissions/{ids[-1]}", secret, json={"answers": {"nps": 0}}
    )
    assert edited.status_code == 200, edited.text

    holder = _process(monkeypatch, tmp_path)
    counted_by_database = calls_to(monkeypatch, repository, "tallies")
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")
    found = await _summaries(api, form_id, secret)
    await holder.settled()

    assert counted_by_database != []  # at least the first ask's: the file was not used
    assert 0 in [call[3] for call in feed_reads]  # the form read from its first change
    assert found == await _by_database(api, form_id, secret, monkeypatch)


@pytest.mark.parametrize(
    "damage", ["a byte flipped", "a slot past the last", "a value not JSON", "a number past all"]
)
async def test_a_damaged_file_is_removed_and_the_form_counted_by_the_database(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    form_id, secret, _ = await _warmed(api, session, engine, tmp_path, monkeypatch, 10)
    (image,) = _files(tmp_path)
    if damage == "a byte flipped":
        data = bytearray(image.read_bytes())
        data[len(data) // 2] ^= 0xFF
        image.write_bytes(bytes(data))
    else:  # whole, by its checksum, and yet naming a submission it does not hold
        store = stored.Store(tmp_path)
        name = _name_of(tmp_path, form_id)
        loaded = store.load(name)
        assert loaded is not None
        if damage == "a slot past the last":
            loaded.slots[0].append(len(loaded.hashes))
        elif damage == "a value not JSON":
            loaded.pairs[0] = (loaded.pairs[0][0], "not JSON")
        else:
            loaded.seq = loaded.known = 2**62
        assert store.save(name, loaded)

    holder = _process(monkeypatch, tmp_path)
    found = await _summaries(api, form_id, secret)
    await holder.settled()

    assert not image.exists()
    assert found == await _by_database(api, form_id, secret, monkeypatch)


async def test_a_file_of_other_questions_is_not_used(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, secret, _ = await _warmed(api, session, engine, tmp_path, monkeypatch, 10)
    blocks = [*EVERY_QUESTION["blocks"], {"type": "rating", "key": "mood", "title": "Mood"}]
    changed = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": blocks})
    assert changed.status_code == 200, changed.text

    holder = _process(monkeypatch, tmp_path)
    counted_by_database = calls_to(monkeypatch, repository, "tallies")
    found = await _summaries(api, form_id, secret)
    await holder.settled()

    assert counted_by_database != []
    assert "mood" in [question["key"] for question in found[0]["questions"]]
    assert found == await _by_database(api, form_id, secret, monkeypatch)


async def test_files_of_forms_gone_or_no_longer_warmed_are_removed_each_round(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept, _, _ = await _posted(api, session, 6)
    deleted, secret, _ = await _posted(api, session, 6)
    smaller, _, _ = await _posted(api, session, 4)
    _process(monkeypatch, tmp_path)
    sessions = create_read_sessionmaker(engine)
    assert await service.warm(sessions, least=4) == 3
    assert len(_files(tmp_path)) == 3
    (tmp_path / "org_z.frm_z.held").mkdir()  # not a file: left, and the sweep goes on
    left = tmp_path / ".org_x.frm_x.held.1234.tmp"  # by a process killed while writing
    left.write_bytes(b"half")
    os.utime(left, (time.time() - 3600, time.time() - 3600))
    writing = tmp_path / ".org_y.frm_y.held.1235.tmp"
    writing.write_bytes(b"being written")
    gone = await api.delete(f"/v1/forms/{deleted}?deleteSubmissions=true", secret)
    assert gone.status_code == 204, gone.text

    await service.warm(sessions, least=6)

    # The deleted form's file and the one no longer warmed are removed.
    assert [path.name.split(".")[1] for path in _files(tmp_path) if path.is_file()] == [kept]
    assert _files(tmp_path, smaller) == []
    assert not left.exists()
    assert writing.exists()


async def test_a_file_being_brought_up_to_date_at_shutdown_is_kept(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, secret, _ = await _warmed(api, session, engine, tmp_path, monkeypatch, 5)
    for plan in ("team", "free"):  # two pages of changes since the file, a change a page
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": plan}}
        )
        assert posted.status_code == 201, posted.text
    monkeypatch.setattr(held, "PAGE", 1)
    holder = _process(monkeypatch, tmp_path)
    # The read from the file waits on its catch-up's first page until shutdown begins.
    reached, stopping = asyncio.Event(), asyncio.Event()
    real = submission_repository.changes_after

    async def changes_after(*args: Any, **kwargs: Any) -> Any:
        if args[3] == 5:  # after the file's last change
            reached.set()
            await stopping.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(submission_repository, "changes_after", changes_after)
    organization_id, _ = _name_of(tmp_path, form_id)
    async with create_read_sessionmaker(engine)() as read:
        service.prepare(read, await form_service.get(read, organization_id, form_id))
    await asyncio.wait_for(reached.wait(), 10)
    stopped = asyncio.create_task(holder.stop())
    await asyncio.sleep(0)  # shutdown has begun
    stopping.set()
    await stopped

    assert holder.copy_of(form_id) is None  # stopped before it was up to date
    assert len(_files(tmp_path, form_id)) == 1  # and its file kept for the next start


async def test_a_file_another_process_keeps_up_to_date_stays_until_none_does(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Processes sharing the directory: one that does not hold a warmed form
    leaves its file while another keeps it (writes it, or touches it each
    round), and removes it once none has for `unkept` seconds."""
    form_id, _, _ = await _warmed(api, session, engine, tmp_path, monkeypatch, 5)
    name = _name_of(tmp_path, form_id)
    (image,) = _files(tmp_path, form_id)
    other = _process(monkeypatch, tmp_path)  # holds nothing
    await other.sweep({name}, unkept=180)
    assert image.exists()
    long_ago = time.time() - 600
    os.utime(image, (long_ago, long_ago))
    _process(monkeypatch, tmp_path)  # a process that holds it, from its file
    assert await service.warm(create_read_sessionmaker(engine), least=5) == 1
    assert image.stat().st_mtime > long_ago + 500  # touched: nothing to write
    await other.sweep({name}, unkept=180)
    assert image.exists()

    os.utime(image, (long_ago, long_ago))  # then no process kept it
    await other.sweep({name}, unkept=180)

    assert not image.exists()


async def test_a_file_that_could_not_be_written_is_written_at_the_next_round(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form_id, _, _ = await _posted(api, session, 5)
    directory = tmp_path / "held"
    directory.write_bytes(b"a file where the directory should be")
    _process(monkeypatch, directory)
    sessions = create_read_sessionmaker(engine)
    assert await service.warm(sessions, least=5) == 1  # held, not stored
    directory.unlink()

    assert await service.warm(sessions, least=5) == 0  # held already: nothing changed since

    assert len(_files(directory, form_id)) == 1


async def test_a_process_that_warms_nothing_removes_the_stored_files_as_it_starts(
    engine: AsyncEngine, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "org_a.frm_a.held").write_bytes(b"an image of an earlier run")
    (tmp_path / "notes.txt").write_bytes(b"not ours")
    _process(monkeypatch, None)
    app = app_on(
        engine, settings.model_copy(update={"summary_warm_from": 0, "summary_dir": str(tmp_path)})
    )
    async with app.router.lifespan_context(app):
        assert _files(tmp_path) == []
        assert (tmp_path / "notes.txt").exists()
        assert held.HELD.store.directory is None


def test_files_are_kept_beside_an_sqlite_database_and_nowhere_by_default_on_postgresql(
    engine: AsyncEngine, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _process(monkeypatch, None)
    app_on(engine, settings)
    url = engine.url
    if engine.dialect.name == "sqlite":
        assert held.HELD.store.directory == Path(f"{url.database}.summaries")
    else:
        assert held.HELD.store.directory is None
