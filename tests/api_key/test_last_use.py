"""A key's last use is recorded beside its requests, never in their way: a
request does not wait for another writer to let the record through."""

import asyncio
import time
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.db.session import create_read_sessionmaker
from formsapi.models import APIKey
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_key, create_org

PLAUSIBLE = "frm_01jd2x8k4m5n6p7q8r9s0t1v2w"  # a form id's shape, found nowhere


async def last_used(engine: AsyncEngine, organization_id: str, key_id: str) -> datetime | None:
    """The key's last use as the service lists it, read afresh."""
    async with create_read_sessionmaker(engine)() as reader:
        keys = await api_key_service.list_for_organization(reader, organization_id)
    [key] = [key for key in keys if key.id == key_id]
    return key.last_used_at


async def recorded(
    engine: AsyncEngine, organization_id: str, key_id: str, within: float = 10.0
) -> datetime | None:
    """The key's last use once it is recorded (None if not within `within` s)."""
    deadline = time.monotonic() + within
    while (found := await last_used(engine, organization_id, key_id)) is None:
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.05)
    return found


async def test_use_is_recorded(api: Api, session: AsyncSession, engine: AsyncEngine) -> None:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()
    assert await last_used(engine, org.id, key_id) is None

    assert (await api.get("/v1/forms", secret)).status_code == 200

    assert await recorded(engine, org.id, key_id) is not None


async def test_a_key_due_for_its_last_use_answers_while_another_writer_holds_its_row(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()
    org_id = org.id  # read now: the rollback below expires it

    # Another writer, not committed, holds the key's row: on SQLite that is
    # the database's one write lock, on PostgreSQL the row's lock.
    await session.execute(
        update(APIKey).where(scoped(APIKey, org_id), APIKey.id == key_id).values(name="renamed")
    )
    # The key's first use: due for its record, which waits for that writer.
    request = asyncio.create_task(api.get("/v1/forms", secret))
    try:
        # Held until the request answers, or for half the busy timeout (a
        # request waiting for the record would wait all of it, then fail).
        await asyncio.wait({request}, timeout=api.settings.database_pool_timeout / 2)
        answered_while_held = request.done()
        still_unrecorded = await last_used(engine, org_id, key_id) is None
    finally:
        await session.rollback()
    response = await request

    assert answered_while_held
    assert response.status_code == 200
    assert still_unrecorded  # the record was waiting, not skipped...
    assert await recorded(engine, org_id, key_id) is not None  # ...and lands once it may


async def test_the_last_use_lands_whatever_the_request_answers(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()

    response = await api.get(f"/v1/forms/{PLAUSIBLE}", secret)

    assert response.status_code == 404
    assert await recorded(engine, org.id, key_id) is not None
