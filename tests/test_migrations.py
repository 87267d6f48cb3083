"""The migrations build what the models describe, and carry existing data
forward: on SQLite and on a fresh PostgreSQL database of their own."""

import asyncio
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import BindParameter, Connection, bindparam, insert, select, text

from formsapi.db.engine import create_engine
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from formsapi.kit.crypto import hash_secret
from formsapi.models import Base, SubmissionCount, SubmissionDayCount
from formsapi.models.base import UTCDateTime
from formsapi.submission import repository as submission_repository
from formsapi.tenancy import scoped
from tests.conftest import scratch_postgres


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


def _time(name: str) -> BindParameter[datetime]:
    return bindparam(name, type_=UTCDateTime())


async def _insert(url: str, *rows: tuple[str, Mapping[str, object]]) -> None:
    """Rows as a database of an earlier revision takes them (today's models
    have columns it lacks): (table, {column: value}); datetimes are times."""
    engine = create_engine(url)
    async with engine.begin() as connection:
        for table, values in rows:
            names = ", ".join(values)
            statement = text(
                f"INSERT INTO {table} ({names}) VALUES ({', '.join(':' + k for k in values)})"  # noqa: S608
            ).bindparams(*(_time(k) for k, v in values.items() if isinstance(v, datetime)))
            await connection.execute(statement, values)
    await engine.dispose()


async def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = create_engine(url)
    async with engine.connect() as connection:
        rows = [tuple(row) for row in await connection.execute(text(sql))]
    await engine.dispose()
    return rows


def test_day_counts_are_backfilled_from_the_hourly_counts(empty_database: str) -> None:
    migrate(empty_database, "0004")  # before the daily counts

    async def seed() -> str:
        engine = create_engine(empty_database)
        at = _at(1, 0)
        await _insert(
            empty_database,
            ("organizations", {"id": "org_1", "name": "Org", "plan": "standard", "created_at": at}),
            (
                "forms",
                {
                    "id": "frm_1",
                    "organization_id": "org_1",
                    "title": "F",
                    "slug": "f",
                    "status": "published",
                    "version": 1,
                    "blocks": "[]",
                    "response_count": 9,
                    "created_at": at,
                    "updated_at": at,
                },
            ),
        )
        async with create_sessionmaker(engine)() as session:
            await session.execute(
                insert(SubmissionCount),
                [
                    {"organization_id": "org_1", "form_id": "frm_1", "hour": hour, "count": n}
                    for hour, n in [(_at(1, 23), 3), (_at(2, 0), 2), (_at(2, 13), 4)]
                ],
            )
            await session.commit()
        await engine.dispose()
        return "frm_1"

    async def day_counts(form_id: str) -> list[tuple[datetime, int]]:
        engine = create_engine(empty_database)
        async with create_sessionmaker(engine)() as session:
            rows = await session.execute(
                select(SubmissionDayCount.day, SubmissionDayCount.count)
                .where(scoped(SubmissionDayCount, "org_1"), SubmissionDayCount.form_id == form_id)
                .order_by(SubmissionDayCount.day)
            )
            found = [(day, count) for day, count in rows]
        await engine.dispose()
        return found

    form_id = asyncio.run(seed())
    migrate(empty_database)

    assert asyncio.run(day_counts(form_id)) == [(_at(1, 0), 3), (_at(2, 0), 6)]


def test_members_who_never_chose_a_password_become_pending_invitations(
    empty_database: str,
) -> None:
    """The release before 0006 made a membership at once and mailed nobody: an
    invited person with no password yet was a member. Now they are invited,
    their sent link still works, and their keys are revoked with the rest of
    those of people no longer members (0007)."""
    migrate(empty_database, "0005")
    now, later = datetime.now(UTC), datetime(2099, 1, 1, tzinfo=UTC)
    people: dict[str, tuple[str | None, str]] = {
        "usr_owner": ("x", "owner"),
        "usr_linked": (None, "editor"),
        "usr_lapsed": (None, "viewer"),
    }
    key = {"name": "k", "prefix": "fapi_x", "scopes": "[]", "created_at": now}
    asyncio.run(
        _insert(
            empty_database,
            ("organizations", {"id": "org_a", "name": "A", "plan": "standard", "created_at": now}),
            *(
                (
                    "users",
                    {
                        "id": user,
                        "email": f"{user}@example.com",
                        "password_hash": hashed,
                        "created_at": now,
                    },
                )
                for user, (hashed, _) in people.items()
            ),
            *(
                (
                    "memberships",
                    {"organization_id": "org_a", "user_id": user, "role": role, "created_at": now},
                )
                for user, (_, role) in people.items()
            ),
            (
                "invitations",
                {
                    "id": hash_secret("the-link"),
                    "organization_id": "org_a",
                    "user_id": "usr_linked",
                    "created_at": now,
                    "expires_at": later,
                },
            ),
            (
                "api_keys",
                {
                    "id": "key_gone",
                    "organization_id": "org_a",
                    "user_id": "usr_linked",
                    "secret_hash": "h1",
                    **key,
                },
            ),
            (
                "api_keys",
                {
                    "id": "key_kept",
                    "organization_id": "org_a",
                    "user_id": "usr_owner",
                    "secret_hash": "h2",
                    **key,
                },
            ),
        )
    )

    migrate(empty_database)

    members = asyncio.run(_rows(empty_database, "SELECT user_id, role FROM memberships"))
    invited = asyncio.run(
        _rows(empty_database, "SELECT email, role, token_hash FROM invitations ORDER BY email")
    )
    revoked = asyncio.run(
        _rows(empty_database, "SELECT id FROM api_keys WHERE revoked_at IS NOT NULL")
    )
    assert members == [("usr_owner", "owner")]
    assert [(email, role) for email, role, _ in invited] == [
        ("usr_lapsed@example.com", "viewer"),
        ("usr_linked@example.com", "editor"),
    ]
    assert invited[1][2] == hash_secret("the-link")  # the link they were sent still works
    assert revoked == [("key_gone",)]


def test_existing_submissions_are_numbered_in_the_order_they_were_submitted(
    empty_database: str,
) -> None:
    """A database of the release before the change feed: each form's
    submissions get 1, 2, ... in (submitted_at, id) order, the form's counter
    starts at its last, and the feed then reads them all."""
    migrate(empty_database, "0008")
    at = _at(1, 0)
    form = {
        "organization_id": "org_1",
        "title": "F",
        "status": "published",
        "version": 1,
        "blocks": "[]",
        "created_at": at,
        "updated_at": at,
    }
    submitted = [  # (id, form, hour): the first two share a time, the id breaks the tie
        ("sub_b", "frm_1", 5),
        ("sub_a", "frm_1", 5),
        ("sub_c", "frm_1", 2),
        ("sub_d", "frm_2", 9),
    ]
    asyncio.run(
        _insert(
            empty_database,
            ("organizations", {"id": "org_1", "name": "Org", "plan": "standard", "created_at": at}),
            ("forms", {**form, "id": "frm_1", "slug": "one", "response_count": 3}),
            ("forms", {**form, "id": "frm_2", "slug": "two", "response_count": 1}),
            ("forms", {**form, "id": "frm_3", "slug": "three", "response_count": 0}),
            *(
                (
                    "submissions",
                    {
                        "id": id_,
                        "organization_id": "org_1",
                        "form_id": form_id,
                        "form_version": 1,
                        "submitted_at": _at(2, hour),
                        "answers": "{}",
                    },
                )
                for id_, form_id, hour in submitted
            ),
        )
    )

    migrate(empty_database)

    numbered = asyncio.run(
        _rows(
            empty_database,
            "SELECT form_id, id, change_seq, version, updated_at FROM submissions "
            "ORDER BY form_id, change_seq",
        )
    )
    counters = asyncio.run(
        _rows(empty_database, "SELECT id, change_seq, tombstone_horizon FROM forms ORDER BY id")
    )
    assert numbered == [
        ("frm_1", "sub_c", 1, 1, None),
        ("frm_1", "sub_a", 2, 1, None),
        ("frm_1", "sub_b", 3, 1, None),
        ("frm_2", "sub_d", 1, 1, None),
    ]
    assert counters == [("frm_1", 3, 0), ("frm_2", 1, 0), ("frm_3", 0, 0)]

    async def feed() -> list[str]:
        engine = create_engine(empty_database)
        async with create_sessionmaker(engine)() as session:
            rows, _ = await submission_repository.changes_after(session, "org_1", "frm_1", 1, 10)
        await engine.dispose()
        return [row[0] for row in rows]

    assert asyncio.run(feed()) == ["sub_a", "sub_b"]
