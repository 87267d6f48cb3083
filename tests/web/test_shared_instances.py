"""With Redis set, every instance of the app (workers, machines) shares the
sign-in throttle, and a change made on one instance's pages holds on all."""

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from tests.conftest import apps_sharing
from tests.support.factories import create_key, create_org
from tests.web.conftest import PASSWORD, Browser, add_member


@pytest.fixture
async def instances(
    engine: AsyncEngine, database_url: str, redis_url: str
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Two app instances on one database and one Redis (a prefix of their own,
    so counts of earlier runs do not carry over)."""
    settings = Settings(
        database_url=database_url, redis_url=redis_url, redis_prefix=f"test-{uuid.uuid4()}"
    )
    async with apps_sharing(settings) as clients:
        yield clients


async def test_failed_sign_ins_on_one_instance_count_on_another(
    instances: list[httpx.AsyncClient], session: AsyncSession
) -> None:
    organization = await create_org(session)
    user = await add_member(session, organization, Role.owner)
    await session.commit()
    first, second = Browser(instances[0]), Browser(instances[1])
    for _ in range(5):
        await first.sign_in_attempt(user.email, "wrong password")

    response = await second.sign_in_attempt(user.email, PASSWORD)

    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.text


async def test_a_role_changed_on_one_instance_narrows_keys_on_another_at_once(
    instances: list[httpx.AsyncClient], session: AsyncSession
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    _, secret = await create_key(
        session, organization, role=Role.editor, user=editor, scopes=["forms:write"]
    )
    await session.commit()
    pages, api = await Browser(instances[0]).sign_in(owner.email), instances[1]
    bearer = {"Authorization": f"Bearer {secret}"}
    assert (await api.post("/v1/forms", json={"title": "A"}, headers=bearer)).status_code == 201

    await pages.submit(f"/settings/members/{editor.id}/role", {"role": "viewer"})
    write = await api.post("/v1/forms", json={"title": "B"}, headers=bearer)

    assert write.status_code == 403


async def test_a_key_revoked_on_one_instance_fails_on_another_at_once(
    instances: list[httpx.AsyncClient], session: AsyncSession
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    key_id, secret = await create_key(session, organization, user=owner)
    await session.commit()
    pages, api = await Browser(instances[0]).sign_in(owner.email), instances[1]
    bearer = {"Authorization": f"Bearer {secret}"}
    assert (await api.get("/v1/forms", headers=bearer)).status_code == 200

    await pages.submit(f"/settings/keys/{key_id}/revoke")

    assert (await api.get("/v1/forms", headers=bearer)).status_code == 401


async def test_a_member_removed_on_one_instance_loses_their_keys_on_another_at_once(
    instances: list[httpx.AsyncClient], session: AsyncSession
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    _, secret = await create_key(session, organization, role=Role.editor, user=editor)
    await session.commit()
    pages, api = await Browser(instances[0]).sign_in(owner.email), instances[1]
    bearer = {"Authorization": f"Bearer {secret}"}
    assert (await api.get("/v1/forms", headers=bearer)).status_code == 200

    await pages.submit(f"/settings/members/{editor.id}/remove")

    assert (await api.get("/v1/forms", headers=bearer)).status_code == 401
