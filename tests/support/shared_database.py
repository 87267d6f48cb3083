"""A migrated database that server processes share (a SQLite file, or a
PostgreSQL database of the test's own), with an organization, a key that
reads and writes submissions (and reads events, manages webhooks), and
published forms."""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from formsapi.db.engine import create_engine
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from tests.conftest import scratch_postgres
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org


@dataclass(frozen=True)
class Setup:
    database_url: str
    organization_id: str
    secret: str
    forms: list[str]


@contextlib.contextmanager
def shared_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a migrated, empty database for the engine `request.param` names."""
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / 'shared.db'}"
        else:
            url = stack.enter_context(scratch_postgres(request.getfixturevalue("postgres_url")))
        migrate(url)
        yield url


async def tenant(url: str, forms: int) -> Setup:
    engine = create_engine(url)
    async with create_sessionmaker(engine)() as session:
        org = await create_org(session)
        _, secret = await create_key(session, org, scopes=EVERY_SCOPE)
        form_ids = [(await create_form(session, org)).id for _ in range(forms)]
        await session.commit()
    await engine.dispose()
    return Setup(url, org.id, secret, form_ids)
