"""Signed-in posts need this session's CSRF token and must not come from another site."""

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.models import Role
from tests.support.factories import create_org
from tests.web.conftest import BASE_URL, BrowserFactory, SignedIn, add_member, members_of


@pytest.mark.parametrize(
    "forgery",
    ["no token", "another session's token", "cross-site origin", "opaque origin"],
)
async def test_a_forged_post_is_refused_and_changes_nothing(
    session: AsyncSession, engine: AsyncEngine, signed_in: SignedIn, forgery: str
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    other = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(owner)
    other_browser = await signed_in(other)
    csrf, headers = browser.csrf, {}
    if forgery == "no token":
        csrf = ""
    elif forgery == "another session's token":
        csrf = other_browser.csrf
    elif forgery == "cross-site origin":
        headers["Origin"] = "https://evil.example"
    else:
        headers["Origin"] = "null"

    key = await browser.post(
        "/settings/keys",
        {"name": "forged key", "scopes": ["forms:read"]},
        csrf=csrf,
        headers=headers,
    )
    role = await browser.post(
        f"/settings/members/{other.id}/role", {"role": "owner"}, csrf=csrf, headers=headers
    )

    assert key.status_code == role.status_code == 403
    assert "This page had expired" in key.text
    keys_page = await browser.get("/settings/keys")
    assert "forged key" not in keys_page.text
    assert "No keys yet" in keys_page.text
    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        other.email: "viewer",
    }


async def test_a_post_with_the_sessions_token_from_this_site_goes_through(
    session: AsyncSession, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await browsers().sign_in(owner.email)

    response = await browser.post(
        "/settings/keys",
        {"name": "real key", "scopes": ["forms:read"]},
        headers={"Origin": BASE_URL},
    )

    assert response.status_code == 303
    assert "real key" in (await browser.get("/settings/keys")).text


async def test_a_post_without_a_session_is_sent_to_sign_in(browsers: BrowserFactory) -> None:
    response = await browsers().post("/settings/keys", {"name": "k", "scopes": ["forms:read"]})

    assert response.status_code == 303
    assert response.headers["location"] == "/sign-in"
