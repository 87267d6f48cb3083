"""The API keys page: a secret shown once, scopes within the role, revocation."""

import re

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.models import Role
from formsapi.organization import service as organization_service
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.web.conftest import SignedIn, add_member, new_key_secret


async def test_a_new_keys_secret_is_shown_once_and_works_against_the_api(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    shown = await browser.submit(
        "/settings/keys", {"name": "dashboard sync", "scopes": ["forms:read"]}
    )
    secret = new_key_secret(shown.text)
    reloaded = await browser.get("/settings/keys")

    assert secret is not None
    assert "it will not be shown again" in shown.text
    assert secret not in reloaded.text
    assert new_key_secret(reloaded.text) is None
    assert "dashboard sync" in reloaded.text  # listed, by name and prefix only
    listed = await api.get("/v1/forms", secret)
    assert listed.status_code == 200
    assert [f["id"] for f in listed.json()["data"]] == [form.id]


async def test_a_key_gets_only_the_scopes_ticked(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)

    secret = new_key_secret(
        (await browser.submit("/settings/keys", {"name": "reader", "scopes": ["forms:read"]})).text
    )

    assert secret is not None
    assert (await api.get("/v1/forms", secret)).status_code == 200
    assert (await api.post("/v1/forms", secret, json={"title": "No"})).status_code == 403


async def test_a_key_needs_a_scope(session: AsyncSession, signed_in: SignedIn) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/keys", {"name": "nothing"})

    assert "Choose at least one scope." in page.text
    assert new_key_secret(page.text) is None
    assert "No keys yet" in page.text


async def test_a_viewer_cannot_grant_write_scopes(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(viewer)

    form = await browser.get("/settings/keys")
    forged = await browser.submit(
        "/settings/keys", {"name": "sneaky", "scopes": ["forms:read", "forms:write"]}
    )

    assert re.search(r'value="forms:write"[^>]*\bdisabled\b', form.text)
    assert re.search(r'value="submissions:write"[^>]*\bdisabled\b', form.text)
    assert not re.search(r'value="forms:read"[^>]*\bdisabled\b', form.text)
    assert "A viewer cannot grant forms:write." in forged.text
    assert new_key_secret(forged.text) is None
    assert "sneaky" not in forged.text
    assert "No keys yet" in forged.text


async def test_a_revoked_key_fails_at_once(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    created = await api_key_service.create(session, organization, owner, "ci")
    await session.commit()
    browser = await signed_in(owner)
    assert (await api.get("/v1/forms", created.secret)).status_code == 200  # cached as valid

    confirm = await browser.get(f"/settings/keys/{created.key.id}/revoke")
    page = await browser.submit(f"/settings/keys/{created.key.id}/revoke")
    after = await api.get("/v1/forms", created.secret)

    assert confirm.status_code == 200
    assert "This cannot be undone." in confirm.text
    assert f"({created.key.prefix}…) is revoked" in page.text
    assert re.search(r'<span class="badge revoked"\s*>revoked</span>', page.text)
    assert after.status_code == 401
    assert after.json()["detail"] == "This API key has been revoked."


@pytest.mark.parametrize("role", [Role.editor, Role.viewer])
async def test_a_member_cannot_revoke_another_members_key(
    api: Api, session: AsyncSession, signed_in: SignedIn, role: str
) -> None:
    organization = await create_org(session)
    actor = await add_member(session, organization, role)
    own_key, _ = await create_key(session, organization, role=role, user=actor)
    other_key, other_secret = await create_key(session, organization, role=Role.editor)
    await session.commit()
    browser = await signed_in(actor)

    listing = await browser.get("/settings/keys")
    confirm = await browser.get(f"/settings/keys/{other_key}/revoke")
    refused = await browser.submit(f"/settings/keys/{other_key}/revoke")
    own = await browser.submit(f"/settings/keys/{own_key}/revoke")

    assert f"/settings/keys/{other_key}/revoke" not in listing.text  # no link offered
    assert f"/settings/keys/{own_key}/revoke" in listing.text
    assert confirm.status_code == 404
    assert "Only owners, admins and the key&#39;s creator can revoke it." in refused.text
    assert (await api.get("/v1/forms", other_secret)).status_code == 200
    assert "is revoked" in own.text  # their own key they may revoke


@pytest.mark.parametrize("role", [Role.owner, Role.admin])
async def test_owners_and_admins_revoke_anyones_key(
    api: Api, session: AsyncSession, signed_in: SignedIn, role: str
) -> None:
    organization = await create_org(session)
    if role != Role.owner:
        await add_member(session, organization, Role.owner)
    actor = await add_member(session, organization, role)
    other_key, other_secret = await create_key(session, organization, role=Role.editor)
    await session.commit()
    browser = await signed_in(actor)

    page = await browser.submit(f"/settings/keys/{other_key}/revoke")

    assert "is revoked" in page.text
    assert (await api.get("/v1/forms", other_secret)).status_code == 401


async def test_another_organizations_key_cannot_be_revoked_from_this_one(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    owner = await add_member(session, acme, Role.owner)
    await add_member(session, beta, Role.owner, owner)  # owner of both; Acme is active
    beta_key, beta_secret = await create_key(session, beta, role=Role.editor)
    await session.commit()
    browser = await signed_in(owner)

    confirm = await browser.get(f"/settings/keys/{beta_key}/revoke")
    refused = await browser.submit(f"/settings/keys/{beta_key}/revoke")

    assert confirm.status_code == 404
    assert "There is no such API key in this organization." in confirm.text
    assert "No such API key in this organization." in refused.text
    assert (await api.get("/v1/forms", beta_secret)).status_code == 200


async def test_a_removed_members_keys_stay_revoked_when_they_come_back(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    created = await api_key_service.create(session, organization, editor, "left behind")
    await session.commit()
    browser = await signed_in(owner)
    assert (await api.get("/v1/forms", created.secret)).status_code == 200

    await browser.submit(f"/settings/members/{editor.id}/remove")
    await add_member(session, organization, Role.owner, editor)  # back, with more rights
    await session.commit()
    page = await browser.get("/settings/keys")

    row = re.search(r"<td data-label=\"Name\">left behind</td>.*?</tr>", page.text, re.S)
    assert row
    assert ">revoked</span>" in row.group(0)
    assert (await api.get("/v1/forms", created.secret)).status_code == 401
