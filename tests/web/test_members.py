"""The members page: who may manage whom, the last owner, invitations, and API
keys that follow their creator's role at once."""

import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db import create_sessionmaker
from formsapi.kit.time import utcnow
from formsapi.models import Invitation, Role
from tests.conftest import Api
from tests.factories import create_form, create_key, create_org, create_user
from tests.web.conftest import (
    BrowserFactory,
    SignedIn,
    add_member,
    csrf_field,
    invitation_link,
    members_of,
    path_of,
)

NEW_EMAIL = "new.person@example.com"
CHOSEN = "my own chosen password"
ONLY_MANAGERS = "Only owners and admins manage members."
ONLY_OWNERS = "Only an owner can make, change or remove an owner."
LAST_OWNER = "An organization must keep at least one owner: make someone else owner first."


async def test_a_key_follows_its_creators_role_from_the_members_page(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    _, secret = await create_key(
        session, organization, role=Role.editor, user=editor, scopes=["forms:read", "forms:write"]
    )
    await session.commit()
    browser = await signed_in(owner)
    before = await api.post("/v1/forms", secret, json={"title": "Before"})

    demoted = await browser.submit(f"/settings/members/{editor.id}/role", {"role": "viewer"})
    write_as_viewer = await api.post("/v1/forms", secret, json={"title": "After"})
    read_as_viewer = await api.get("/v1/forms", secret)
    removed = await browser.submit(f"/settings/members/{editor.id}/remove")
    read_after_removal = await api.get("/v1/forms", secret)

    assert before.status_code == 201
    assert "Role changed to viewer" in demoted.text
    assert write_as_viewer.status_code == 403
    assert read_as_viewer.status_code == 200
    assert [f["title"] for f in read_as_viewer.json()["data"]] == ["Before"]
    assert f"{editor.email} was removed" in removed.text
    assert read_after_removal.status_code == 401


async def test_an_editor_cannot_manage_members(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(editor)
    page = await browser.get("/settings/members")

    added = await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})
    promoted = await browser.submit(f"/settings/members/{viewer.id}/role", {"role": "editor"})
    removed = await browser.submit(f"/settings/members/{viewer.id}/remove")

    assert 'action="/settings/members"' not in page.text  # no form to add anyone
    assert f'action="/settings/members/{viewer.id}/role"' not in page.text
    for refused in (added, promoted, removed):
        assert ONLY_MANAGERS in refused.text
    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        editor.email: "editor",
        viewer.email: "viewer",
    }


async def test_a_member_may_leave_on_their_own(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(viewer)

    left = await browser.post(f"/settings/members/{viewer.id}/remove")
    page = await browser.get(left.headers["location"])

    assert left.status_code == 303
    assert "You are not in an organization" in page.text
    assert await members_of(engine, organization.id) == {owner.email: "owner"}


async def test_an_admin_cannot_make_change_or_remove_an_owner(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    editor = await add_member(session, organization, Role.editor)
    await session.commit()
    browser = await signed_in(admin)
    page = await browser.get("/settings/members")

    attempts = [
        await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "owner"}),
        await browser.submit(f"/settings/members/{editor.id}/role", {"role": "owner"}),
        await browser.submit(f"/settings/members/{owner.id}/role", {"role": "viewer"}),
        await browser.submit(f"/settings/members/{owner.id}/remove"),
    ]

    assert '<option value="owner"' not in page.text  # not offered
    for refused in attempts:
        assert ONLY_OWNERS in refused.text
    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        admin.email: "admin",
        editor.email: "editor",
    }


async def test_an_admin_manages_everyone_but_owners(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    editor = await add_member(session, organization, Role.editor)
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(admin)

    await browser.submit(f"/settings/members/{editor.id}/role", {"role": "admin"})
    await browser.submit(f"/settings/members/{viewer.id}/remove")

    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        admin.email: "admin",
        editor.email: "admin",
    }


async def test_the_last_owner_cannot_be_demoted_or_removed(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    await session.commit()
    browser = await signed_in(owner)

    demoted = await browser.submit(f"/settings/members/{owner.id}/role", {"role": "admin"})
    removed = await browser.submit(f"/settings/members/{owner.id}/remove")

    assert LAST_OWNER in demoted.text
    assert LAST_OWNER in removed.text
    assert await members_of(engine, organization.id) == {
        owner.email: "owner",
        admin.email: "admin",
    }


async def test_an_owner_can_step_down_once_there_is_another_owner(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    await session.commit()
    browser = await signed_in(owner)

    await browser.submit(f"/settings/members/{admin.id}/role", {"role": "owner"})
    page = await browser.submit(f"/settings/members/{owner.id}/role", {"role": "admin"})

    assert "Role changed to admin" in page.text
    assert await members_of(engine, organization.id) == {
        owner.email: "admin",
        admin.email: "owner",
    }


async def test_an_existing_user_is_added_at_once_without_a_link(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    existing = await create_user(session)  # has a password, in no organization
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/members", {"email": existing.email, "role": "editor"})

    assert f"{existing.email} is now editor" in page.text
    assert invitation_link(page.text) is None
    assert "/invitations/" not in page.text
    assert (await members_of(engine, organization.id))[existing.email] == "editor"
    their_forms = await (await signed_in(existing)).get("/forms")
    assert "You are not in an organization" not in their_forms.text


async def test_adding_a_member_twice_is_refused(session: AsyncSession, signed_in: SignedIn) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/members", {"email": editor.email, "role": "viewer"})

    assert f"{editor.email} is already a member of this organization." in page.text


async def test_an_invitation_link_is_shown_once_and_signs_the_new_member_in(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)

    added = await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})
    link = invitation_link(added.text)
    reloaded = await browser.get("/settings/members")
    assert link is not None
    invitee = browsers()
    invitation = await invitee.get(path_of(link))
    accepted = await invitee.client.post(
        path_of(link),
        data={
            "new_password": CHOSEN,
            "confirm_password": CHOSEN,
            "csrf_token": csrf_field(invitation.text),
        },
    )
    welcome = await invitee.get(accepted.headers["location"])

    assert link.startswith("http://testserver/invitations/")
    assert invitation_link(reloaded.text) is None
    assert link not in reloaded.text
    assert invitation.status_code == 200
    assert NEW_EMAIL in invitation.text
    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/forms"
    assert welcome.status_code == 200
    assert "Welcome to Org. Your password is set." in welcome.text
    assert (await members_of(engine, organization.id))[NEW_EMAIL] == "viewer"
    assert (await browsers().sign_in_attempt(NEW_EMAIL, CHOSEN)).status_code == 303


async def test_an_invitation_link_works_only_once(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    link = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    assert link is not None
    first = browsers()
    form = await first.get(path_of(link))
    fields = {"new_password": CHOSEN, "confirm_password": CHOSEN}
    await first.client.post(path_of(link), data={**fields, "csrf_token": csrf_field(form.text)})

    second = browsers()
    again = await second.get(path_of(link))
    takeover = await second.client.post(
        path_of(link),
        data={
            "new_password": "an attacker's password",
            "confirm_password": "an attacker's password",
            "csrf_token": csrf_field((await second.get("/sign-in")).text),
        },
    )

    assert again.status_code == 404
    assert "This invitation link is not valid" in again.text
    assert takeover.status_code == 404
    assert second.session_cookie is None
    assert (await browsers().sign_in_attempt(NEW_EMAIL, CHOSEN)).status_code == 303


@pytest.mark.parametrize(
    ("new", "confirm", "message"),
    [
        (CHOSEN, CHOSEN + "!", "The passwords do not match."),
        ("short", "short", "The password must have at least 10 characters."),
    ],
    ids=["confirmation differs", "too short"],
)
async def test_a_refused_password_keeps_the_invitation_open(
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
    new: str,
    confirm: str,
    message: str,
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    link = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    assert link is not None
    invitee = browsers()
    form = await invitee.get(path_of(link))

    refused = await invitee.client.post(
        path_of(link),
        data={
            "new_password": new,
            "confirm_password": confirm,
            "csrf_token": csrf_field(form.text),
        },
    )

    assert refused.status_code == 400
    assert message in refused.text
    assert invitee.session_cookie is None
    assert (await browsers().get(path_of(link))).status_code == 200


async def test_accepting_an_invitation_needs_the_double_submit_token(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    link = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    assert link is not None

    forged = await browsers().client.post(
        path_of(link), data={"new_password": CHOSEN, "confirm_password": CHOSEN}
    )

    assert forged.status_code == 403
    assert (await browsers().get(path_of(link))).status_code == 200  # still open


@pytest.mark.parametrize("link", ["expired", "bogus"])
async def test_an_expired_or_bogus_invitation_link_shows_a_clear_page(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
    link: str,
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    url = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    assert url is not None
    path = path_of(url)
    if link == "expired":
        async with create_sessionmaker(engine)() as other, other.begin():
            await other.execute(
                update(Invitation).values(expires_at=utcnow() - timedelta(seconds=1))
            )
    else:
        path = "/invitations/not-a-real-token"

    page = await browsers().get(path)
    post = await browsers().client.post(
        path, data={"new_password": CHOSEN, "confirm_password": CHOSEN}
    )

    assert page.status_code == post.status_code == 404
    assert (
        "This invitation link is not valid: it was used, it expired, or it was replaced. "
        "Ask for a new one." in page.text
    )
    assert 'name="new_password"' not in page.text


async def test_a_removed_members_open_browser_loses_the_organization(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, title="Secret plans")
    await session.commit()
    owners_browser = await signed_in(owner)
    editors_browser = await signed_in(editor)
    assert "Secret plans" in (await editors_browser.get("/forms")).text

    await owners_browser.submit(f"/settings/members/{editor.id}/remove")
    forms = await editors_browser.get("/forms")
    form_page = await editors_browser.get(f"/forms/{form.id}")
    csv_file = await editors_browser.get(f"/forms/{form.id}/submissions.csv")
    key = await editors_browser.post(
        "/settings/keys", {"name": "after removal", "scopes": ["forms:read"]}
    )

    assert "You are not in an organization" in forms.text
    assert "Secret plans" not in forms.text
    assert "Secret plans" not in form_page.text
    assert "submission_id" not in csv_file.text
    assert key.status_code == 303
    assert "after removal" not in (await owners_browser.get("/settings/keys")).text


async def test_a_new_link_replaces_the_old_one(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    old = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    invited_id = _invited_user_id(await browser.get("/settings/members"))

    renewed = await browser.submit(f"/settings/members/{invited_id}/invitation")
    new = invitation_link(renewed.text)

    assert old is not None
    assert new is not None
    assert new != old
    assert (await browsers().get(path_of(old))).status_code == 404
    assert (await browsers().get(path_of(new))).status_code == 200


async def test_removing_an_invited_member_withdraws_their_link(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    link = invitation_link(
        (await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})).text
    )
    assert link is not None
    invited_id = _invited_user_id(await browser.get("/settings/members"))

    await browser.submit(f"/settings/members/{invited_id}/remove")

    assert (await browsers().get(path_of(link))).status_code == 404


async def test_an_invited_person_cannot_sign_in_before_choosing_a_password(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "viewer"})

    attempt = await browsers().sign_in_attempt(NEW_EMAIL, "")

    assert attempt.status_code == 400
    assert "Email or password is incorrect." in attempt.text


async def test_an_unknown_role_is_refused(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit(f"/settings/members/{editor.id}/role", {"role": "superuser"})

    assert "Unknown role &#39;superuser&#39;" in page.text
    assert (await members_of(engine, organization.id))[editor.email] == "editor"


def _invited_user_id(page: httpx.Response) -> str:
    match = re.search(r'action="/settings/members/([^/"]+)/invitation"', page.text)
    assert match, "no invited member on the page"
    return match.group(1)
