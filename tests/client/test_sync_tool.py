"""`formsapi-sync` against a real server on each engine, into each target
database: typed and new columns, edits and deletes, a column widened, a
submission edited during a first copy, an expired position, a deleted form,
and one clear line for each mistake."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from formsapi.db.engine import create_engine
from formsapi.db.session import create_sessionmaker
from formsapi.submission.retention import purge_tombstones
from formsapi_client import Client, UnreadableResponse
from formsapi_client.sync.runner import Sync
from formsapi_client.sync.store import Page, Store, TargetBusy
from tests.client.conftest import Live
from tests.client.proxy import Answer, Proxy
from tests.client.sync_tool import copied, everything, form_table, on_server, sync, sync_env
from tests.conftest import scratch_postgres
from tests.support import cli_runner
from tests.support.shared_database import Setup
from tests.support.writers import ANSWERS


def test_new_questions_become_typed_columns_and_edits_and_deletes_apply(
    tmp_path: Path, live: Live, setup: Setup, target: str
) -> None:
    with Client(live.base_url, setup.secret) as client:
        form_id = setup.forms[0]
        kept = client.submissions.create(form_id, {"name": "Ada", "colors": "red"})
        gone = client.submissions.create(form_id, {"name": "Bob", "colors": "red"})
        assert sync(live, setup, target, "--form", form_id).returncode == 0

        form = client.forms.get(form_id)
        blocks = [b.model_dump(by_alias=True, exclude_none=True) for b in form.blocks]
        added: list[dict[str, Any]] = [
            {"type": "number", "key": "years", "title": "Years with us", "integer": True},
            {"type": "number", "key": "score", "title": "Score"},
            {"type": "date", "key": "born", "title": "Born"},
            {"type": "short_text", "key": "submitted_at", "title": "Sent on paper at"},
        ]
        # Printed as given: no emoji codes, no markup.
        client.forms.update(form_id, title="Q3 :rocket: [b]plans[/b]", blocks=blocks + added)
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

    done = sync(live, setup, target, "--form", form_id)
    assert done.returncode == 0, done.stderr
    assert f"Q3 :rocket: [b]plans[/b] ({form_id}) -> " in done.stdout, done.stdout
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
    with Client(live.base_url, setup.secret) as client:
        number_only = {"type", "integer", "min", "max", "unit"}
        changed = [
            {k: v for k, v in b.items() if k not in number_only} | {"type": "short_text"}
            if b.get("key") == "years"
            else b
            for b in blocks + added
        ]
        client.forms.update(form_id, blocks=changed)
        wordy = client.submissions.create(form_id, {**answers, "years": "forty"})
    assert sync(live, setup, target, "--form", form_id).returncode == 0
    assert form_table(target, form_id)[1][wordy.id].years == "forty"

    # A form deleted on the server: its table stays as the last copy, marked
    # once; a watching pass after that is no change (it would poll at once).
    with Client(live.base_url, setup.secret) as client:
        client.forms.delete(form_id, delete_submissions=True)
        marking = sync(live, setup, target, "--form", form_id)
        assert marking.returncode == 0, marking.stderr
        assert "deleted on the server; its last copy stays in" in marking.stdout
        assert wordy.id in form_table(target, form_id)[1]
        marked = everything(target)
        store = Store(target)
        try:
            [again] = Sync(client, store).once([form_id])
        finally:
            store.close()
    assert (again.gone, again.changed) == (True, False)
    assert everything(target) == marked


def test_a_first_copy_widens_a_column_for_answers_of_an_older_type(
    live: Live, setup: Setup, target: str
) -> None:
    # The table is made from the form's latest version, where "years" is a
    # number; answers to the first version, where it was text, come first.
    form_id = setup.forms[0]
    with Client(live.base_url, setup.secret) as client:
        form = client.forms.get(form_id)
        blocks = [b.model_dump(by_alias=True, exclude_none=True) for b in form.blocks]
        wordy_block = {"type": "short_text", "key": "years", "title": "Years with us"}
        client.forms.update(form_id, blocks=[*blocks, wordy_block])
        wordy = client.submissions.create(form_id, {**ANSWERS, "years": "forty"})
        number_block = {"type": "number", "key": "years", "title": "Years", "integer": True}
        client.forms.update(form_id, blocks=[*blocks, number_block])
        exact = client.submissions.create(form_id, {**ANSWERS, "years": 41})

    done = sync(live, setup, target, "--form", form_id)

    assert done.returncode == 0, done.stderr
    columns, rows = form_table(target, form_id)
    assert isinstance(columns["years"], sa.Text)
    assert {id_: row.years for id_, row in rows.items()} == {wordy.id: "forty", exact.id: "41"}


def test_a_submission_edited_during_a_first_copy_is_updated_not_doubled(
    live: Live, setup: Setup, target: str
) -> None:
    # A first copy writes pages straight into the table; a submission edited
    # after its page was copied is listed again later, and must update its row.
    form_id = setup.forms[0]
    store = Store(target)
    try:
        with Client(live.base_url, setup.secret) as client:
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
    live: Live, setup: Setup, target: str
) -> None:
    form_id = setup.forms[0]
    with Client(live.base_url, setup.secret) as client:
        kept = [client.submissions.create(form_id, ANSWERS) for _ in range(3)]
        assert sync(live, setup, target, "--form", form_id).returncode == 0
        client.submissions.delete(form_id, kept[0].id)
        client.submissions.create(form_id, ANSWERS)
    engine = create_engine(setup.database_url)
    # Every tombstone goes (other tests' too: the database is shared): the
    # copy's position is now behind the horizon.
    assert await purge_tombstones(create_sessionmaker(engine), days=0) >= 1
    await engine.dispose()

    again = sync(live, setup, target, "--form", form_id)

    assert again.returncode == 0, again.stderr
    assert "copied again from the start" in again.stdout, again.stdout
    assert copied(target)[form_id] == on_server(live, setup)[form_id]
    assert kept[0].id not in copied(target)[form_id]


def test_mistakes_get_one_clear_line_and_a_status(tmp_path: Path, live: Live, setup: Setup) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    env = sync_env(setup)

    def run(*args: str, **changes: str) -> subprocess.CompletedProcess[str]:
        return cli_runner.run_sync_tool(list(args), {**env, **changes}, tmp_path)

    with Proxy(live.base_url).running() as portal:
        portal.plans = [Answer("text/html", b"<html>Sign in to the Wi-Fi</html>")]
        misrouted = run("--to", target, "--url", portal.url)
    cases = [
        (misrouted, 1, "sent a response this tool cannot read"),
        (run("--to", target, "--url", live.base_url, FORMSAPI_API_KEY=""), 2, "FORMSAPI_API_KEY"),
        (
            run("--to", target, "--url", live.base_url, FORMSAPI_API_KEY="fapi_wrong"),
            2,
            "refused the API key",
        ),
        (run("--to", target, "--url", "http://127.0.0.1:9"), 3, "Cannot reach the server"),
        (run("--to", target, "--url", "http://[::1"), 2, "--url: The server's URL"),
        (run("--to", target, "--url", "127.0.0.1:8000"), 2, "must be http(s)://host"),
        (
            run("--to", "postgresql://nobody:secret@127.0.0.1:9/x", "--url", live.base_url),
            4,
            "The database at postgresql://nobody:***@127.0.0.1:9/x refused",
        ),
        (  # libpq takes a password in the query too
            run(
                "--to", "postgresql://nobody@127.0.0.1:9/x?password=secret", "--url", live.base_url
            ),
            4,
            "The database at postgresql://***@127.0.0.1:9/x?*** refused",
        ),
        (run("--to", target, "--url", live.base_url, "--form", "frm_nope"), 2, "No form"),
    ]
    for done, status, says in cases:
        assert done.returncode == status, (done.stdout, done.stderr)
        assert says in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert "secret" not in done.stderr
        assert "fapi_wrong" not in done.stderr


def test_without_its_extra_the_command_says_what_to_install() -> None:
    # As if `pip install formsapi-client` without [sync]: typer cannot be imported.
    launch = (
        "import sys; sys.modules['typer'] = None; "
        "from formsapi_client._command import sync_tool; sync_tool()"
    )
    done = subprocess.run(
        [sys.executable, "-c", launch], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "formsapi-sync: it needs the client's sync extra (typer is missing): "
        "pip install 'formsapi-client[sync]'\n"
    )


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


def test_a_run_whose_postgresql_session_was_ended_knows_it_lost_the_copy(
    postgres_url: str,
) -> None:
    # The advisory lock lives as long as the session holding it: once that is
    # ended (a restart, an idle timeout), another run may take the copy.
    with scratch_postgres(postgres_url) as url:
        store = Store(url)
        try:
            store.check_lock()
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks JOIN pg_database d "
                    "ON d.oid = database WHERE locktype = 'advisory' "
                    "AND d.datname = current_database()"
                )
            with pytest.raises(TargetBusy, match="This run lost its hold on postgresql://"):
                store.check_lock()
            Store(url).close()  # free for the next run
        finally:
            store.close()
