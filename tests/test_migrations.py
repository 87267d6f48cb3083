"""The migrations build what the models describe, and carry existing data
forward: on SQLite and on a fresh PostgreSQL database of their own."""

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, insert, select

from formsapi.db import create_engine, create_sessionmaker, migrate
from formsapi.models import Base, SubmissionCount, SubmissionDayCount
from tests.conftest import scratch_postgres
from tests.factories import create_form, create_org


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrations.db'}"
        return
    # Days and hours must be UTC's whatever the server's zone: +05:30 shifts both.
    with scratch_postgres(request.getfixturevalue("postgres_url"), timezone="Asia/Kolkata") as url:
        yield url


def _differences(connection: Connection) -> list[object]:
    return list(compare_metadata(MigrationContext.configure(connection), Base.metadata))


def test_the_migrations_build_the_models_schema(empty_database: str) -> None:
    migrate(empty_database)

    async def differences() -> list[object]:
        engine = create_engine(empty_database)
        async with engine.connect() as connection:
            found = await connection.run_sync(_differences)
        await engine.dispose()
        return found

    assert asyncio.run(differences()) == []


def _at(day: int, hour: int) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def test_day_counts_are_backfilled_from_the_hourly_counts(empty_database: str) -> None:
    migrate(empty_database, "0004")  # before the daily counts

    async def seed() -> str:
        engine = create_engine(empty_database)
        async with create_sessionmaker(engine)() as session:
            org = await create_org(session)
            form = await create_form(session, org)
            await session.execute(
                insert(SubmissionCount),
                [
                    {"organization_id": org.id, "form_id": form.id, "hour": hour, "count": n}
                    for hour, n in [(_at(1, 23), 3), (_at(2, 0), 2), (_at(2, 13), 4)]
                ],
            )
            await session.commit()
        await engine.dispose()
        return form.id

    async def day_counts(form_id: str) -> list[tuple[datetime, int]]:
        engine = create_engine(empty_database)
        async with create_sessionmaker(engine)() as session:
            rows = await session.execute(
                select(SubmissionDayCount.day, SubmissionDayCount.count)
                .where(SubmissionDayCount.form_id == form_id)
                .order_by(SubmissionDayCount.day)
            )
            found = [(day, count) for day, count in rows]
        await engine.dispose()
        return found

    form_id = asyncio.run(seed())
    migrate(empty_database)

    assert asyncio.run(day_counts(form_id)) == [(_at(1, 0), 3), (_at(2, 0), 6)]
