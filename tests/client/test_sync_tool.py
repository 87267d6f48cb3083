"""`formsapi-sync` end to end: a real server on each engine, a copy in each
target database, fifty writers, and the tool killed with SIGKILL and
started again while it watches. The copy must end equal to the server's
data, row for row and value for value; a run with nothing new writes nothing."""

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from formsapi.db import create_engine, create_sessionmaker
from formsapi.submission.retention import purge_tombstones
from formsapi_client import Client, UnreadableResponse
from formsapi_client.sync.store import Page, Store
from tests.client.proxy import Answer, Proxy
from tests.conftest import scratch_postgres
from tests.servers import Server, clean_env, start_server, stop_servers
from tests.shared_database import Setup, shared_database, tenant
from tests.writers import ANSWERS, WRITERS, Writers

SYNC = Path(sys.executable).parent / "formsapi-sync"
WRITING_SECONDS = 3.0
CATCH_UP_SECONDS = 60


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    with shared_database(request, tmp_path) as url:
        yield asyncio.run(tenant(url, forms=2))


@pytest.fixture
def server(setup: Setup, tmp_path: Path) -> Iterator[Server]:
    env = clean_env(database_url=setup.database_url, rate_limit_enabled="false")
    started = start_server(tmp_path, env, "server", ("--no-access-log",))
    try:
        started.wait_until_healthy()
        yield started
    finally:
        stop_servers([started])


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'copy.db'}"
    else:
        with scratch_postgres(request.getfixturevalue("postgres_url")) as url:
            yield url


def _env(setup: Setup) -> dict[str, str]:
    return clean_env() | {"FORMSAPI_API_KEY": setup.secret}


def sync(server: Server, setup: Setup, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SYNC), "--to", target, "--url", server.base_url, *args],
        env=_env(setup),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def watch(server: Server, setup: Setup, target: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(SYNC), "--to", target, "--url", server.base_url, "--watch", "--longest-wait", "1"],
            env=_env(setup),
            stdout=output,
            stderr=output,
        )


def _engine(target: str) -> sa.Engine:
    return sa.create_engine(target.replace("postgresql://", "postgresql+psycopg://", 1))


def copied(target: str) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Each form's table in the copy: submission -> (name, colors, form
    version, submitted, updated)."""
    engine = _engine(target)
    found: dict[str, dict[str, tuple[Any, ...]]] = {}
    with engine.connect() as connection:
        tables = connection.execute(sa.text("SELECT form_id, table_name FROM formsapi_forms"))
        for form_id, table in list(tables):
            columns = "submission_id, name, colors, form_version, submitted_at, updated_at"
            rows = connection.execute(sa.text(f'SELECT {columns} FROM "{table}"'))  # noqa: S608
            found[form_id] = {row[0]: (*row[1:4], _utc(row[4]), _utc(row[5])) for row in rows}
    engine.dispose()
    return found


def form_table(target: str, form_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A form's table in the copy: its columns' types by name, and its rows
    by submission id."""
    engine = _engine(target)
    with engine.connect() as connection:
        table = connection.execute(
            sa.text("SELECT table_name FROM formsapi_forms WHERE form_id = :f"), {"f": form_id}
        ).scalar_one()
        columns = {c["name"]: c["type"] for c in sa.inspect(connection).get_columns(table)}
        found = connection.execute(sa.text(f'SELECT * FROM "{table}"'))  # noqa: S608
        rows = {row.submission_id: row for row in found}
    engine.dispose()
    return columns, rows


def state(target: str) -> list[tuple[Any, ...]]:
    engine = _engine(target)
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT form_id, position, copied, updated_at FROM formsapi_sync_state")
        )
        found = sorted(tuple(row) for row in rows)
    engine.dispose()
    return found


def _utc(moment: datetime | str) -> datetime:
    if isinstance(moment, str):  # SQLite keeps them as text: '2026-11-23 11:45:53.593000'
        moment = datetime.fromisoformat(moment)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def on_server(server: Server, setup: Setup) -> dict[str, dict[str, tuple[Any, ...]]]:
    """The server's data as its export gives it."""
    found: dict[str, dict[str, tuple[Any, ...]]] = {}
    with Client(server.base_url, setup.secret) as client:
        for form_id in setup.forms:
            with client.submissions.export(form_id) as export:
                found[form_id] = {
                    row.id: (
                        row.answers.get("name"),
                        row.answers.get("colors"),
                        row.form_version,
                        row.submitted_at.astimezone(UTC),
                        row.updated_at.astimezone(UTC),
                    )
                    for row in export
                }
    return found


def change_seqs(server: Server, setup: Setup) -> dict[str, int]:
    with Client(server.base_url, setup.secret) as client:
        return {form.id: form.change_seq for form in client.forms.iter()}


def caught_up(server: Server, setup: Setup, target: str) -> bool:
    wanted = change_seqs(server, setup)
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while time.monotonic() < deadline:
        positions = {form_id: position for form_id, position, _, _ in state(target)}
        if positions == wanted:
            return True
        time.sleep(0.1)
    return False


async def test_a_watching_copy_killed_twice_ends_equal_to_the_server(
    setup: Setup, server: Server, target: str, tmp_path: Path
) -> None:
    clients = [
        httpx.AsyncClient(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {setup.secret}"},
            timeout=60,
            limits=httpx.Limits(max_connections=WRITERS + 4),
        )
    ]
    writers = Writers(setup, clients, seed=16)
    loop = asyncio.get_running_loop()
    # Something to copy first, then the copy, then the writers with it watching.
    await asyncio.gather(*(writers.write(loop.time() + 0.5) for _ in range(10)))
    first = await asyncio.to_thread(sync, server, setup, target)
    assert first.returncode == 0, first.stderr
    assert copied(target) == on_server(server, setup)

    log = tmp_path / "watch.log"
    watcher = watch(server, setup, target, log)
    kills = 0

    async def kill_and_restart() -> None:
        nonlocal watcher, kills
        for _ in range(2):
            await asyncio.sleep(WRITING_SECONDS / 3)
            watcher.send_signal(signal.SIGKILL)
            watcher.wait(timeout=10)
            kills += 1
            watcher = watch(server, setup, target, log)

    until = loop.time() + WRITING_SECONDS
    await asyncio.gather(kill_and_restart(), *(writers.write(until) for _ in range(WRITERS)))
    for client in clients:
        await client.aclose()
    try:
        assert await asyncio.to_thread(caught_up, server, setup, target), log.read_text()
        watcher.send_signal(signal.SIGINT)  # Ctrl-C: stops between pages
        assert watcher.wait(timeout=30) == 0, log.read_text()
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert kills == 2
    assert "Stopped between pages" in log.read_text()
    assert writers.seen.deleted
    assert any(v > 1 for v in writers.seen.versions.values())

    server_data = on_server(server, setup)
    assert copied(target) == server_data
    assert sum(len(rows) for rows in server_data.values()) > 0

    # Nothing new: a run writes nothing, and says so.
    before = state(target)
    again = sync(server, setup, target)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("up to date") == len(setup.forms), again.stdout
    assert state(target) == before
    assert copied(target) == server_data


def test_new_questions_become_typed_columns_and_edits_and_deletes_apply(
    tmp_path: Path, server: Server, setup: Setup, target: str
) -> None:
    with Client(server.base_url, setup.secret) as client:
        form_id = setup.forms[0]
        kept = client.submissions.create(form_id, {"name": "Ada", "colors": "red"})
        gone = client.submissions.create(form_id, {"name": "Bob", "colors": "red"})
        assert sync(server, setup, target, "--form", form_id).returncode == 0

        form = client.forms.get(form_id)
        blocks = [b.model_dump(by_alias=True, exclude_none=True) for b in form.blocks]
        added: list[dict[str, Any]] = [
            {"type": "number", "key": "years", "title": "Years with us", "integer": True},
            {"type": "number", "key": "score", "title": "Score"},
            {"type": "date", "key": "born", "title": "Born"},
            {"type": "short_text", "key": "submitted_at", "title": "Sent on paper at"},
        ]
        client.forms.update(form_id, blocks=blocks + added)
        answers: dict[str, str | int | float] = {
            "name": "Cy",
            "colors": "red",
            "years": 41,
            "score": 2.5,
            "submitted_at": "9am",
        }
        newer = client.submissions.create(form_id, {**answers, "born": "1985-02-03"})
        client.submissions.edit(form_id, kept.id, {"name": "Ada L."})
        client.submissions.delete(form_id, gone.id)

    done = sync(server, setup, target, "--form", form_id)
    assert done.returncode == 0, done.stderr
    assert "2 written, 1 deleted" in done.stdout, done.stdout
    columns, rows = form_table(target, form_id)
    assert list(columns)[:4] == ["submission_id", "submitted_at", "updated_at", "form_version"]
    assert isinstance(columns["age"], sa.BigInteger)  # in the first version
    assert isinstance(columns["years"], sa.BigInteger)  # added in the second
    assert isinstance(columns["score"], sa.Float)
    assert isinstance(columns["born"], sa.Date)
    assert set(rows) == {kept.id, newer.id}
    assert rows[kept.id].name == "Ada L."
    assert rows[kept.id].years is None
    assert (rows[newer.id].years, rows[newer.id].score) == (41, 2.5)
    assert rows[newer.id].submitted_at_2 == "9am"  # a question named like a column of ours
    assert str(rows[newer.id].born) == "1985-02-03"
    assert rows[newer.id].form_version == 2

    # A question that changes type widens its column, and the copy goes on.
    with Client(server.base_url, setup.secret) as client:
        number_only = {"type", "integer", "min", "max", "unit"}
        changed = [
            {k: v for k, v in b.items() if k not in number_only} | {"type": "short_text"}
            if b.get("key") == "years"
            else b
            for b in blocks + added
        ]
        client.forms.update(form_id, blocks=changed)
        wordy = client.submissions.create(form_id, {**answers, "years": "forty"})
    assert sync(server, setup, target, "--form", form_id).returncode == 0
    assert form_table(target, form_id)[1][wordy.id].years == "forty"


def test_a_first_copy_widens_a_column_for_answers_of_an_older_type(
    server: Server, setup: Setup, target: str
) -> None:
    # The table is made from the form's latest version, where "years" is a
    # number; answers to the first version, where it was text, come first.
    form_id = setup.forms[0]
    with Client(server.base_url, setup.secret) as client:
        form = client.forms.get(form_id)
        blocks = [b.model_dump(by_alias=True, exclude_none=True) for b in form.blocks]
        wordy_block = {"type": "short_text", "key": "years", "title": "Years with us"}
        client.forms.update(form_id, blocks=[*blocks, wordy_block])
        wordy = client.submissions.create(form_id, {**ANSWERS, "years": "forty"})
        number_block = {"type": "number", "key": "years", "title": "Years", "integer": True}
        client.forms.update(form_id, blocks=[*blocks, number_block])
        exact = client.submissions.create(form_id, {**ANSWERS, "years": 41})

    done = sync(server, setup, target, "--form", form_id)

    assert done.returncode == 0, done.stderr
    columns, rows = form_table(target, form_id)
    assert isinstance(columns["years"], sa.Text)
    assert {id_: row.years for id_, row in rows.items()} == {wordy.id: "forty", exact.id: "41"}


def test_a_submission_edited_during_a_first_copy_is_updated_not_doubled(
    server: Server, setup: Setup, target: str
) -> None:
    # A first copy writes pages straight into the table; a submission edited
    # after its page was copied is listed again later, and must update its row.
    form_id = setup.forms[0]
    store = Store(target)
    try:
        with Client(server.base_url, setup.secret) as client:
            ada = client.submissions.create(form_id, ANSWERS)
            bob = client.submissions.create(form_id, {**ANSWERS, "name": "Bob"})
            store.prepare(client.forms.get(form_id))
            first = Page.read(client.submissions.changes_json(form_id, 0, 1))
            store.apply(form_id, [first])
            client.submissions.edit(form_id, ada.id, {"name": "Ada L."})
            rest = Page.read(client.submissions.changes_json(form_id, first.next, 1000))
            assert [change["id"] for change in rest.data] == [bob.id, ada.id]
            store.apply(form_id, [rest])
    finally:
        store.close()
    assert {row: values[0] for row, values in copied(target)[form_id].items()} == {
        ada.id: "Ada L.",
        bob.id: "Bob",
    }


async def test_a_position_older_than_the_kept_tombstones_copies_the_form_again(
    server: Server, setup: Setup, target: str
) -> None:
    form_id = setup.forms[0]
    with Client(server.base_url, setup.secret) as client:
        kept = [client.submissions.create(form_id, ANSWERS) for _ in range(3)]
        assert sync(server, setup, target, "--form", form_id).returncode == 0
        client.submissions.delete(form_id, kept[0].id)
        client.submissions.create(form_id, ANSWERS)
    engine = create_engine(setup.database_url)
    # Every tombstone goes: the copy's position is now behind the horizon.
    assert await purge_tombstones(create_sessionmaker(engine), days=0) == 1
    await engine.dispose()

    again = sync(server, setup, target, "--form", form_id)

    assert again.returncode == 0, again.stderr
    assert "copied again from the start" in again.stdout, again.stdout
    assert copied(target)[form_id] == on_server(server, setup)[form_id]
    assert kept[0].id not in copied(target)[form_id]


def test_mistakes_get_one_clear_line_and_a_status(
    tmp_path: Path, server: Server, setup: Setup
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    env = _env(setup)

    def run(*args: str, **changes: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SYNC), *args],
            env={**env, **changes},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    with Proxy(server.base_url).running() as portal:
        portal.plans = [Answer("text/html", b"<html>Sign in to the Wi-Fi</html>")]
        misrouted = run("--to", target, "--url", portal.url)
    cases = [
        (misrouted, 1, "sent a response this tool cannot read"),
        (run("--to", target, "--url", server.base_url, FORMSAPI_API_KEY=""), 2, "FORMSAPI_API_KEY"),
        (
            run("--to", target, "--url", server.base_url, FORMSAPI_API_KEY="fapi_wrong"),
            2,
            "refused the API key",
        ),
        (run("--to", target, "--url", "http://127.0.0.1:9"), 3, "Cannot reach the server"),
        (
            run("--to", "postgresql://nobody:secret@127.0.0.1:9/x", "--url", server.base_url),
            4,
            "The database at postgresql://nobody:***@127.0.0.1:9/x refused",
        ),
        (run("--to", target, "--url", server.base_url, "--form", "frm_nope"), 2, "No form"),
    ]
    for done, status, says in cases:
        assert done.returncode == status, (done.stdout, done.stderr)
        assert says in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert "secret" not in done.stderr
        assert "fapi_wrong" not in done.stderr


@pytest.mark.parametrize(
    "answer",
    [
        [],
        {"data": [], "next": "5", "hasMore": False},
        {"data": {}, "next": 5, "hasMore": False},
        {"data": [{"id": 7, "deleted": True}], "next": 5, "hasMore": False},
        {"data": [{"id": "sub_1", "answers": [], "formVersion": 1}], "next": 5, "hasMore": False},
        {
            "data": [
                {
                    "id": "sub_1",
                    "answers": {},
                    "formVersion": 1,
                    "submittedAt": "yesterday",
                    "updatedAt": "2026-11-23T10:00:00.000Z",
                }
            ],
            "next": 5,
            "hasMore": False,
        },
    ],
)
def test_a_feed_page_missing_what_the_copy_needs_is_refused_before_anything_is_written(
    answer: object,
) -> None:
    with pytest.raises(UnreadableResponse):
        Page.read(answer)
