"""The members page: who may manage whom, the last owner, invitations, and API
keys that follow their creator's role at once."""

import asyncio
import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db.session import create_sessionmaker
from formsapi.kit.time import utcnow
from formsapi.models import Invitation, Role
from formsapi.organization import service as organization_service
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_user
from tests.web.conftest import (
    CHOSEN,
    PASSWORD,
    BrowserFactory,
    SignedIn,
    add_member,
    create_account,
    csrf_field,
    invitation_link,
    invite,
    members_of,
    new_key_secret,
    path_of,
)

NEW_EMAIL = "new.person@example.com"
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


async def test_adding_a_member_twice_is_refused(session: AsyncSession, signed_in: SignedIn) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/members", {"email": editor.email, "role": "viewer"})

    assert f"{editor.email} is already a member of this organization." in page.text


async def test_an_invitation_link_is_shown_once_and_creates_the_new_members_account(
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
    accepted = await create_account(invitee, link)
    welcome = await invitee.get(accepted.headers["location"])

    assert link.startswith("http://testserver/invitations/")
    assert "whoever opens the link can create it" in added.text  # what the link can do
    assert invitation_link(reloaded.text) is None
    assert link not in reloaded.text
    assert invitation.status_code == 200
    assert NEW_EMAIL in invitation.text
    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/forms"
    assert welcome.status_code == 200
    assert "Welcome to Org." in welcome.text
    assert (await members_of(engine, organization.id))[NEW_EMAIL] == "viewer"
    assert (await browsers().sign_in_attempt(NEW_EMAIL, CHOSEN)).status_code == 303


async def test_an_invited_address_is_no_member_until_the_invitation_is_accepted(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    existing = await create_user(session)  # has a password, in no organization
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/members", {"email": existing.email, "role": "editor"})
    their_forms = await (await signed_in(existing)).get("/forms")

    assert invitation_link(page.text) is not None
    assert existing.email not in await members_of(engine, organization.id)
    assert "You are not in an organization" in their_forms.text


async def test_an_existing_account_accepts_only_when_signed_in_to_it(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    existing = await create_user(session)
    someone_else = await create_user(session)
    await session.commit()
    link = await invite(await signed_in(owner), existing.email, "editor")
    path = path_of(link)

    anonymous = await browsers().get(path)
    other = await signed_in(someone_else)
    other_page = await other.get(path)
    other_post = await other.post(path, {"csrf_token": csrf_field(other_page.text)})
    holder = await signed_in(existing)
    holder_page = await holder.get(path)
    accepted = await holder.post(path, {"csrf_token": csrf_field(holder_page.text)})
    forms = await holder.get(accepted.headers["location"])

    assert 'name="new_password"' not in anonymous.text
    assert "Sign in as" in anonymous.text
    assert f"This invitation is for {existing.email}" in other_page.text
    assert other_post.status_code == 403
    assert "Accept and join" in holder_page.text
    assert accepted.status_code == 303
    assert "Welcome to Org." in forms.text
    members = await members_of(engine, organization.id)
    assert members[existing.email] == "editor"
    assert someone_else.email not in members
    assert (await browsers().get(path)).status_code == 404  # used up


async def test_an_invitation_link_never_sets_the_password_of_an_existing_account(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    existing = await create_user(session)
    await session.commit()
    link = await invite(await signed_in(owner), existing.email, "viewer")

    attempt = await create_account(browsers(), link, "an attacker's password")

    assert attempt.status_code == 400
    assert "exists already: sign in to it to accept" in attempt.text
    assert (await browsers().sign_in_attempt(existing.email, PASSWORD)).status_code == 303
    assert (
        await browsers().sign_in_attempt(existing.email, "an attacker's password")
    ).status_code == 400


async def test_another_organizations_invitation_cannot_take_over_an_invited_address(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
) -> None:
    """Organization A invites an address with no account; organization B's owner
    invites the same address, opens B's link and creates the account with a
    password of their own. They hold an account by that name, in B, and
    nothing of A: A's invitation still needs A's link."""
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    acme_owner = await add_member(session, acme, Role.owner)
    form = await create_form(session, acme, title="Acme's secret form")
    beta_owner = await add_member(session, beta, Role.owner)
    await session.commit()
    acme_link = await invite(await signed_in(acme_owner), NEW_EMAIL, "admin")
    beta_link = await invite(await signed_in(beta_owner), NEW_EMAIL, "viewer")

    attacker = browsers()
    created = await create_account(attacker, beta_link, "the attacker's password")
    forms = await attacker.get(created.headers["location"])
    attacker.csrf = csrf_field(forms.text)
    switched = await attacker.post("/settings/organization", {"organization_id": acme.id})
    after_switch = await attacker.get("/forms")
    form_page = await attacker.get(f"/forms/{form.id}")
    key = await attacker.submit("/settings/keys", {"name": "stolen", "scopes": ["forms:read"]})

    assert created.status_code == 303
    assert switched.status_code == 303
    assert "Acme" not in after_switch.text
    assert "Acme&#39;s secret form" not in form_page.text
    assert new_key_secret(key.text) is not None  # a key of Beta, the attacker's own
    assert NEW_EMAIL not in await members_of(engine, acme.id)
    assert (await browsers().get(path_of(acme_link))).status_code == 200  # still pending
    # The link of A, in the right hands, can no longer create the account: its
    # holder signs in, and resets a password they do not know (by mail).
    assert "Sign in as" in (await browsers().get(path_of(acme_link))).text


async def test_an_account_made_through_one_organization_is_not_added_at_once_to_another(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    acme_owner = await add_member(session, acme, Role.owner)
    beta_owner = await add_member(session, beta, Role.owner)
    await session.commit()
    beta_link = await invite(await signed_in(beta_owner), NEW_EMAIL, "viewer")
    attacker = browsers()
    await create_account(attacker, beta_link, "the attacker's password")

    acme_page = await (await signed_in(acme_owner)).submit(
        "/settings/members", {"email": NEW_EMAIL, "role": "admin"}
    )
    attackers_organizations = await attacker.get("/settings/account")

    assert invitation_link(acme_page.text) is not None  # invited, not added
    assert NEW_EMAIL not in await members_of(engine, acme.id)
    assert "Acme" not in attackers_organizations.text


async def test_an_invitation_link_works_only_once(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    link = await invite(await signed_in(owner), NEW_EMAIL, "viewer")
    await create_account(browsers(), link)

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
    link = await invite(await signed_in(owner), NEW_EMAIL, "viewer")
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
    link = await invite(await signed_in(owner), NEW_EMAIL, "viewer")

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
    path = path_of(await invite(browser, NEW_EMAIL, "viewer"))
    if link == "expired":
        async with create_sessionmaker(engine)() as other, other.begin():
            await other.execute(
                update(Invitation)
                .where(scoped(Invitation, organization.id))
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
    else:
        path = "/invitations/not-a-real-token"

    page = await browsers().get(path)
    post = await browsers().client.post(
        path, data={"new_password": CHOSEN, "confirm_password": CHOSEN}
    )
    members_page = await browser.get("/settings/members")

    assert page.status_code == post.status_code == 404
    assert (
        "This invitation link is not valid: it was used, it expired, or it was replaced. "
        "Ask for a new one." in page.text
    )
    assert 'name="new_password"' not in page.text
    assert (">expired</span>" in members_page.text) == (link == "expired")


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
    old = await invite(browser, NEW_EMAIL, "viewer")
    invitation_id = _pending_invitation_id(await browser.get("/settings/members"))

    renewed = await browser.submit(f"/settings/members/invitations/{invitation_id}/renew")
    new = invitation_link(renewed.text)

    assert new is not None
    assert new != old
    assert (await browsers().get(path_of(old))).status_code == 404
    assert (await browsers().get(path_of(new))).status_code == 200


async def test_withdrawing_an_invitation_ends_its_link(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    link = await invite(browser, NEW_EMAIL, "viewer")
    invitation_id = _pending_invitation_id(await browser.get("/settings/members"))

    withdrawn = await browser.submit(f"/settings/members/invitations/{invitation_id}/cancel")

    assert f"The invitation of {NEW_EMAIL} is withdrawn." in withdrawn.text
    assert (await browsers().get(path_of(link))).status_code == 404


async def test_an_admin_cannot_renew_or_withdraw_an_owners_invitation(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    await session.commit()
    link = await invite(await signed_in(owner), NEW_EMAIL, "owner")
    admins = await signed_in(admin)
    invitation_id = _pending_invitation_id(await (await signed_in(owner)).get("/settings/members"))

    attempts = [
        await admins.submit(f"/settings/members/invitations/{invitation_id}/renew"),
        await admins.submit(f"/settings/members/invitations/{invitation_id}/cancel"),
    ]

    for refused in attempts:
        assert ONLY_OWNERS in refused.text
    assert (await browsers().get(path_of(link))).status_code == 200


async def test_another_organizations_invitation_answers_like_a_missing_one(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    acme_owner = await add_member(session, acme, Role.owner)
    beta_owner = await add_member(session, beta, Role.owner)
    await session.commit()
    acme_browser = await signed_in(acme_owner)
    await invite(acme_browser, NEW_EMAIL, "viewer")
    invitation_id = _pending_invitation_id(await acme_browser.get("/settings/members"))
    beta_browser = await signed_in(beta_owner)

    theirs = await beta_browser.submit(f"/settings/members/invitations/{invitation_id}/cancel")
    missing = await beta_browser.submit("/settings/members/invitations/inv_nope/cancel")

    assert "No such invitation in this organization." in theirs.text
    assert "No such invitation in this organization." in missing.text
    assert NEW_EMAIL in (await acme_browser.get("/settings/members")).text


async def test_an_invited_person_cannot_sign_in_before_creating_the_account(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    await invite(await signed_in(owner), NEW_EMAIL, "viewer")

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


def _pending_invitation_id(page: httpx.Response) -> str:
    match = re.search(r'action="/settings/members/invitations/([^/"]+)/renew"', page.text)
    assert match, "no pending invitation on the page"
    return match.group(1)


async def test_an_admin_cannot_replace_an_owners_pending_invitation(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    admin = await add_member(session, organization, Role.admin)
    await session.commit()
    link = await invite(await signed_in(owner), NEW_EMAIL, "owner")

    replaced = await (await signed_in(admin)).submit(
        "/settings/members", {"email": NEW_EMAIL, "role": "viewer"}
    )

    assert ONLY_OWNERS in replaced.text
    assert "as <strong>owner</strong>" in (await browsers().get(path_of(link))).text


async def test_inviting_the_same_address_twice_at_once_answers_both_without_error(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    first, second = await signed_in(owner), await signed_in(owner)

    answers = await asyncio.gather(
        first.post("/settings/members", {"email": NEW_EMAIL, "role": "viewer"}),
        second.post("/settings/members", {"email": NEW_EMAIL, "role": "editor"}),
    )
    page = await first.get("/settings/members")

    assert [answer.status_code for answer in answers] == [303, 303]
    assert page.text.count(f'<td data-label="Email">{NEW_EMAIL}</td>') == 1  # one pending


async def test_two_links_racing_to_create_one_account_leave_one_password(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    acme_owner = await add_member(session, acme, Role.owner)
    beta_owner = await add_member(session, beta, Role.owner)
    await session.commit()
    acme_link = await invite(await signed_in(acme_owner), NEW_EMAIL, "viewer")
    beta_link = await invite(await signed_in(beta_owner), NEW_EMAIL, "viewer")

    answers = await asyncio.gather(
        create_account(browsers(), acme_link, "the first password"),
        create_account(browsers(), beta_link, "the second password"),
    )

    assert sorted(answer.status_code for answer in answers) == [303, 400]
    winner = "the first password" if answers[0].status_code == 303 else "the second password"
    loser = "the second password" if winner == "the first password" else "the first password"
    assert (await browsers().sign_in_attempt(NEW_EMAIL, winner)).status_code == 303
    assert (await browsers().sign_in_attempt(NEW_EMAIL, loser)).status_code == 400
