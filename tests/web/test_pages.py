"""Every page of the settings area answers what it cannot do the same way:
something a page names that is not there, or is another organization's, is
one 404 page; a refused form goes back to its page with the error shown once;
a person in no organization gets the same answer from every section; and
the members page offers exactly what the member service allows."""

import re
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.api_key.scopes import Scope
from formsapi.config import Settings
from formsapi.kit.egress import Policy
from formsapi.kit.ids import new_id
from formsapi.member import service as member_service
from formsapi.models import Role
from formsapi.organization import service as organization_service
from formsapi.services import services_of
from formsapi.webhook import service as webhook_service
from formsapi.webhook.schemas import WebhookEndpointCreate
from tests.support.factories import create_form, create_key, create_org, create_user
from tests.web.conftest import BrowserFactory, SignedIn, add_member, members_of

ALERT = re.compile(r'<p class="error" role="alert">([^<]*)</p>')


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["w" * 32],  # webhooks configured on both engines
        webhook_allow_private_networks=True,
        webhook_worker="off",
    )


async def test_what_a_page_names_answers_alike_in_every_section_missing_or_another_organizations(
    app: FastAPI, session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    owner = await add_member(session, acme, Role.owner)
    stranger = await add_member(session, beta, Role.editor)
    form = await create_form(session, beta, title="Beta poll")
    key_id, _ = await create_key(session, beta, role=Role.editor, user=stranger)
    endpoint, _ = await webhook_service.create(
        session,
        services_of(app).secret_box,
        beta.id,
        WebhookEndpointCreate(url="http://127.0.0.1:9/beta"),
        policy=Policy(allow_private=True),
        scopes=frozenset(Scope),
    )
    _, delivery_id = await webhook_service.send_test(session, beta.id, endpoint.id)
    await session.commit()
    browser = await signed_in(owner)  # of Acme only
    webhook, delivery = f"/settings/webhooks/{endpoint.id}", f"deliveries/{delivery_id}"
    missing_webhook = f"/settings/webhooks/{new_id('whe')}"
    pages = [
        # (Beta's, a missing one, what the page says)
        (f"/forms/{form.id}", f"/forms/{new_id('frm')}", "form"),
        (f"/forms/{form.id}/submissions.csv", f"/forms/{new_id('frm')}/submissions.csv", "form"),
        (f"/settings/keys/{key_id}/revoke", f"/settings/keys/{new_id('key')}/revoke", "API key"),
        (
            f"/settings/members/{stranger.id}/remove",
            f"/settings/members/{new_id('usr')}/remove",
            "member",
        ),
        (webhook, missing_webhook, "webhook endpoint"),
        (f"{webhook}/delete", f"{missing_webhook}/delete", "webhook endpoint"),
        (f"{webhook}/{delivery}", f"{missing_webhook}/{delivery}", "webhook endpoint"),
        (f"{webhook}/{delivery}", f"{webhook}/deliveries/{new_id('whd')}", "webhook endpoint"),
    ]

    for foreign_path, missing_path, thing in pages:
        foreign, missing = await browser.get(foreign_path), await browser.get(missing_path)

        assert foreign.status_code == missing.status_code == 404, foreign_path
        assert foreign.text == missing.text, foreign_path
        assert f"There is no such {thing} in this organization." in foreign.text
        assert "not found</h1>" in foreign.text
        assert 'href="/forms">Back to your forms' in foreign.text
        assert foreign.headers["cache-control"] == "no-store"
        for secret in ("Beta", "127.0.0.1:9", stranger.email):
            assert secret not in foreign.text, foreign_path


async def test_switching_to_an_organization_you_are_not_in_answers_like_one_that_is_not_there(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await create_org(session)
    beta = await organization_service.create(session, "Beta")
    user = await add_member(session, acme, Role.owner)
    await session.commit()
    browser = await signed_in(user)

    foreign = await browser.post("/settings/organization", {"organization_id": beta.id})
    foreign_page = await browser.get(foreign.headers["location"])
    missing = await browser.post("/settings/organization", {"organization_id": new_id("org")})
    missing_page = await browser.get(missing.headers["location"])

    assert foreign.status_code == missing.status_code == 303
    assert foreign.headers["location"] == missing.headers["location"] == "/forms"
    assert foreign_page.text == missing_page.text
    assert ALERT.findall(foreign_page.text) == ["You are not a member of that organization."]
    assert "Beta" not in foreign_page.text


async def test_a_refused_form_goes_back_to_its_page_which_shows_the_error_once(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization)
    await session.commit()
    as_owner, as_editor = await signed_in(owner), await signed_in(editor)
    posts = [
        # (who, the form's action, its fields, the page it went back to, what that page says)
        (as_owner, "/settings/keys", {"name": "k"}, "/settings/keys", "Choose at least one scope."),
        (
            as_editor,
            "/settings/members",
            {"email": "new@example.com", "role": "viewer"},
            "/settings/members",
            "Only owners and admins manage members.",
        ),
        (
            as_editor,
            "/settings/org/embedding",
            {"origins": "https://example.com"},
            "/settings/org",
            "Only owners and admins change the organization's settings.",
        ),
        (
            as_editor,
            f"/forms/{form.id}/embedding",
            {"embedding": "own", "origins": "https://example.com/path"},
            f"/forms/{form.id}",
            "Not an origin (scheme://host[:port], no path): https://example.com/path.",
        ),
        (
            as_owner,
            "/settings/webhooks",
            {"url": ""},
            "/settings/webhooks",
            "The URL cannot receive webhooks. URL: the URL must start with https://.",
        ),
        (
            as_owner,
            "/settings/account/password",
            {"current_password": "wrong", "new_password": "x" * 12, "confirm_password": "x" * 12},
            "/settings/account",
            "The current password is incorrect.",
        ),
    ]

    for browser, action, fields, page, message in posts:
        posted = await browser.post(action, fields)
        shown = await browser.get(posted.headers["location"])
        again = await browser.get(page)

        assert posted.status_code == 303, action
        assert posted.headers["location"] == page
        [error] = ALERT.findall(shown.text)
        assert error.replace("&#39;", "'").startswith(message), error
        assert ALERT.findall(again.text) == []  # shown once
    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        editor.email: "editor",
    }


async def test_a_person_in_no_organization_gets_the_same_answer_from_every_section(
    session: AsyncSession, browsers: BrowserFactory
) -> None:
    """Each page says so at once, and each form goes back to its section's
    page (the confirmation page of a removal redirected; a webhook form
    answered with the page itself)."""
    alone = await create_user(session)
    await session.commit()
    browser = await browsers().sign_in(alone.email)
    someone, thing = new_id("usr"), new_id("whe")
    pages = [
        "/forms",
        f"/forms/{new_id('frm')}",
        f"/forms/{new_id('frm')}/submissions.csv",
        "/settings/keys",
        f"/settings/keys/{new_id('key')}/revoke",
        "/settings/members",
        f"/settings/members/{someone}/remove",
        "/settings/org",
        "/settings/webhooks",
        f"/settings/webhooks/{thing}",
    ]
    forms: list[tuple[str, dict[str, Any], str]] = [
        ("/settings/keys", {"name": "k", "scopes": ["forms:read"]}, "/settings/keys"),
        ("/settings/members", {"email": "a@example.com", "role": "viewer"}, "/settings/members"),
        (f"/settings/members/{someone}/remove", {}, "/settings/members"),
        ("/settings/org/embedding", {"origins": ""}, "/settings/org"),
        (f"/forms/{new_id('frm')}/embedding", {"embedding": "organization"}, "/forms"),
        ("/settings/webhooks", {"url": "https://example.com/hook"}, "/settings/webhooks"),
        (f"/settings/webhooks/{thing}/disable", {}, "/settings/webhooks"),
    ]

    for path in pages:
        shown = await browser.get(path)

        assert shown.status_code == 200, path
        assert "You are not in an organization" in shown.text, path
    for action, fields, page in forms:
        posted = await browser.post(action, fields)

        assert posted.status_code == 303, action
        assert posted.headers["location"] == page


@pytest.mark.parametrize("actor", [Role.owner, Role.admin, Role.editor])
async def test_the_members_page_offers_exactly_the_changes_the_member_service_allows(
    session: AsyncSession, signed_in: SignedIn, actor: str
) -> None:
    organization = await create_org(session)
    me = await add_member(session, organization, actor)
    others = {role: await add_member(session, organization, role) for role in Role}
    if actor != Role.owner:
        await add_member(session, organization, Role.owner)  # another owner stays
    await session.commit()
    browser = await signed_in(me)
    page = (await browser.get("/settings/members")).text

    for role, member in others.items():
        allowed = member_service.can_change_member(actor, role)
        # The same role again: a change the service takes or refuses, changing nothing.
        answer = await browser.submit(f"/settings/members/{member.id}/role", {"role": role})

        assert (f'action="/settings/members/{member.id}/role"' in page) == allowed, role
        assert (f'href="/settings/members/{member.id}/remove"' in page) == allowed, role
        assert ("Role changed" in answer.text) == allowed, role
    manages = 'name="email"' in page  # the form to invite someone
    assert manages == member_service.can_manage_members(actor)
