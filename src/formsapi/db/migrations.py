"""The schema: Alembic's migrations run, and checked current at start."""

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from formsapi.db.engine import async_url, create_engine

MIGRATIONS_DIR = Path(__file__).parent.parent / "migrations"


def _alembic_config(url: str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    return config


class SchemaNotCurrent(Exception):
    """The database's schema is not the one this version of formsapi runs on."""


def _revisions(connection: Connection) -> set[str]:
    from alembic.migration import MigrationContext

    return set(MigrationContext.configure(connection).get_current_heads())


async def check_schema(engine: AsyncEngine) -> None:
    """Refuse a database whose schema is behind (or ahead of) this version:
    management commands never migrate one behind the operator's back."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    async with engine.connect() as connection:
        current = await connection.run_sync(_revisions)
    heads = set(script.get_heads())
    if current == heads:
        return
    if not current:
        raise SchemaNotCurrent("the database has no schema yet: run `formsapi migrate` first")
    if all(_known(script, revision) for revision in current):
        raise SchemaNotCurrent(
            "the database schema is behind this version of formsapi: run `formsapi migrate`"
        )
    raise SchemaNotCurrent(
        "the database schema is newer than this version of formsapi: upgrade formsapi"
    )


def _known(script: Any, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # alembic: an unknown revision raises its own resolution error
        return False


def migrate(url: str, revision: str = "head") -> set[str]:
    """Bring the database to `revision`, creating the SQLite file if needed;
    the revisions it was at before (none for a new database)."""
    from alembic import command

    parsed = make_url(async_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    before = asyncio.run(_current_revisions(url))
    command.upgrade(_alembic_config(url), revision)
    return before


async def _current_revisions(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_revisions)
    finally:
        await engine.dispose()
