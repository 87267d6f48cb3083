"""Running `formsapi-sync` against a test's server, and reading the copy it
makes: the helpers of test_sync_tool.py and test_sync_tool_watch.py."""

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from formsapi_client import Client
from tests.client.conftest import Live
from tests.support import cli_runner
from tests.support.servers import clean_env
from tests.support.shared_database import Setup

SYNC = Path(sys.executable).parent / "formsapi-sync"
CATCH_UP_SECONDS = 60


def sync_env(setup: Setup) -> dict[str, str]:
    return clean_env() | {"FORMSAPI_API_KEY": setup.secret}


def sync(server: Live, setup: Setup, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A run of the tool, in this process (tests/support/cli_runner.py): a new Python
    process took two seconds of CPU a run to import what this one holds."""
    return cli_runner.run_sync_tool(
        ["--to", target, "--url", server.base_url, *args], sync_env(setup), Path.cwd()
    )


def sync_process(
    server: Live, setup: Setup, target: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """A run of the tool as its own process, for a test's other thread."""
    return subprocess.run(
        [str(SYNC), "--to", target, "--url", server.base_url, *args],
        env=sync_env(setup),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def watch(server: Live, setup: Setup, target: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [str(SYNC), "--to", target, "--url", server.base_url, "--watch", "--longest-wait", "1"],
            env=sync_env(setup),
            stdout=output,
            stderr=output,
        )


@contextlib.contextmanager
def _connected(target: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(target.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def copied(target: str) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Each form's table in the copy: submission -> (name, colors, form
    version, submitted, updated)."""
    found: dict[str, dict[str, tuple[Any, ...]]] = {}
    with _connected(target) as connection:
        tables = connection.execute(sa.text("SELECT form_id, table_name FROM formsapi_forms"))
        for form_id, table in list(tables):
            columns = "submission_id, name, colors, form_version, submitted_at, updated_at"
            rows = connection.execute(sa.text(f'SELECT {columns} FROM "{table}"'))  # noqa: S608
            found[form_id] = {row[0]: (*row[1:4], _utc(row[4]), _utc(row[5])) for row in rows}
    return found


def form_table(target: str, form_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A form's table in the copy: its columns' types by name, and its rows
    by submission id."""
    with _connected(target) as connection:
        table = connection.execute(
            sa.text("SELECT table_name FROM formsapi_forms WHERE form_id = :f"), {"f": form_id}
        ).scalar_one()
        columns = {c["name"]: c["type"] for c in sa.inspect(connection).get_columns(table)}
        found = connection.execute(sa.text(f'SELECT * FROM "{table}"'))  # noqa: S608
        rows = {row.submission_id: row for row in found}
    return columns, rows


def everything(target: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table in the copy, to show a run changed nothing."""
    with _connected(target) as connection:
        tables = sa.inspect(connection).get_table_names()
        found = {
            table: sorted(
                (tuple(row) for row in connection.execute(sa.text(f'SELECT * FROM "{table}"'))),  # noqa: S608
                key=repr,
            )
            for table in tables
        }
    return found


def state(target: str) -> list[tuple[Any, ...]]:
    with _connected(target) as connection:
        rows = connection.execute(
            sa.text("SELECT form_id, position, copied, updated_at FROM formsapi_sync_state")
        )
        found = sorted(tuple(row) for row in rows)
    return found


def _utc(moment: datetime | str) -> datetime:
    if isinstance(moment, str):  # SQLite keeps them as text: '2026-11-23 11:45:53.593000'
        moment = datetime.fromisoformat(moment)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def on_server(server: Live, setup: Setup) -> dict[str, dict[str, tuple[Any, ...]]]:
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


def change_seqs(server: Live, setup: Setup) -> dict[str, int]:
    with Client(server.base_url, setup.secret) as client:
        return {form.id: form.change_seq for form in client.forms.iter()}


def progress(target: str) -> int:
    """The copy's positions added up: it grows with every commit."""
    return sum(position for _, position, _, _ in state(target))


def commits_after(target: str, before: int) -> bool:
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while time.monotonic() < deadline:
        if progress(target) > before:
            return True
        time.sleep(0.05)
    return False


def caught_up(server: Live, setup: Setup, target: str) -> bool:
    wanted = change_seqs(server, setup)
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while time.monotonic() < deadline:
        positions = {form_id: position for form_id, position, _, _ in state(target)}
        if positions == wanted:
            return True
        time.sleep(0.1)
    return False
