"""The SQLite database and the files SQLite keeps beside it are its owner's alone."""

import asyncio
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from formsapi.config import Settings
from formsapi.db.engine import create_engine, dispose
from formsapi.db.migrations import migrate
from formsapi.webhook.service import secret_box


@pytest.fixture(autouse=True)
def _umask_022() -> Iterator[None]:
    # The common default, under which SQLite on its own makes a database 0644.
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _modes(database: Path) -> dict[str, int]:
    return {
        path.name: _mode(path)
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"))
    }


async def test_a_new_database_its_wal_shared_memory_and_key_files_are_0600(
    tmp_path: Path,
) -> None:
    database = tmp_path / "data" / "formsapi.db"
    url = f"sqlite:///{database}"
    await asyncio.to_thread(migrate, url)  # as `formsapi migrate` creates it
    assert secret_box(Settings(database_url=url, secret_key=[])) is not None  # as a start does
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE notes (body TEXT)"))
            await connection.execute(text("INSERT INTO notes VALUES ('written')"))
        # The pooled connection is still open, so SQLite keeps -wal and -shm.
        async with engine.connect() as connection:
            assert (await connection.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
        assert _modes(database) == {
            "formsapi.db": 0o600,
            "formsapi.db-wal": 0o600,
            "formsapi.db-shm": 0o600,
        }
        assert _mode(Path(f"{database}.key")) == 0o600
    finally:
        await dispose(engine)


async def test_an_older_versions_0644_database_is_tightened_with_one_line_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "formsapi.db"
    # What an older version left: a database in WAL mode, held open by a
    # connection of its own (so -wal and -shm exist), readable by anyone.
    older = sqlite3.connect(database, isolation_level=None)
    try:
        older.execute("PRAGMA journal_mode=WAL")
        older.execute("CREATE TABLE notes (body TEXT)")
        older.execute("INSERT INTO notes VALUES ('old')")
        for path in _modes(database):
            (tmp_path / path).chmod(0o644)
        assert set(_modes(database).values()) == {0o644}

        with caplog.at_level(logging.INFO, logger="formsapi"):
            engine = create_engine(f"sqlite:///{database}")
            try:
                async with engine.begin() as connection:
                    await connection.execute(text("INSERT INTO notes VALUES ('new')"))
                    rows = (await connection.execute(text("SELECT body FROM notes"))).all()
            finally:
                await dispose(engine)
            assert [row.body for row in rows] == ["old", "new"]
            assert set(_modes(database).values()) == {0o600}

            # Already private: the next start says nothing.
            again = create_engine(f"sqlite:///{database}")
            try:
                async with again.connect() as connection:
                    await connection.execute(text("SELECT 1"))
            finally:
                await dispose(again)
    finally:
        older.close()

    messages = [record.getMessage() for record in caplog.records if record.name == "formsapi"]
    assert len(messages) == 1, messages
    assert "private" in messages[0]
    for name in ("formsapi.db (644 to 600)", "formsapi.db-wal", "formsapi.db-shm"):
        assert name in messages[0]


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
async def test_an_in_memory_database_still_works_and_leaves_no_file(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE notes (body TEXT)"))
            await connection.execute(text("INSERT INTO notes VALUES ('kept')"))
            assert (await connection.execute(text("SELECT body FROM notes"))).scalar() == "kept"
    finally:
        await dispose(engine)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("what", ["a file that is not a database", "a directory"])
async def test_what_is_not_a_database_is_left_as_it_is_for_sqlite_to_refuse(
    what: str, tmp_path: Path
) -> None:
    path = tmp_path / "formsapi.db"
    if what == "a directory":
        path.mkdir(mode=0o755)
    else:
        path.write_bytes(b"not a database, " * 512)
        path.chmod(0o644)
    engine = create_engine(f"sqlite:///{path}")
    try:
        with pytest.raises(DBAPIError):
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
    finally:
        await dispose(engine)
    assert _mode(path) == (0o755 if what == "a directory" else 0o644)
