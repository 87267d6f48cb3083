"""With a mail server configured, invitations and password resets go by mail
to the address and are never shown on screen; without one, the pages say
what the shown links can do and how a password is reset instead."""

from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from tests.support.factories import create_org, create_user
from tests.support.mail import Inbox, smtp_server
from tests.web.conftest import (
    CHOSEN,
    PASSWORD,
    BrowserFactory,
    SignedIn,
    add_member,
    create_account,
    csrf_field,
    invitation_link,
    members_of,
)

PUBLIC = "https://forms.example.com"
NEW_EMAIL = "new.person@example.com"
NEW_PASSWORD = "a brand new password"


@pytest.fixture
def mail() -> Iterator[tuple[str, Inbox]]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def inbox(mail: tuple[str, Inbox]) -> Inbox:
    return mail[1]


@pytest.fixture
def settings(database_url: str, mail: tuple[str, Inbox]) -> Settings:
    return Settings(database_url=database_url, redis_url=None, smtp_url=mail[0], public_url=PUBLIC)


def _path(link: str) -> str:
    assert link.startswith(PUBLIC + "/"), link  # the configured address, never the Host header
    return link.removeprefix(PUBLIC)


async def test_an_invitation_is_mailed_and_never_shown(
    engine: AsyncEngine,
    session: AsyncSession,
    signed_in: SignedIn,
    browsers: BrowserFactory,
    inbox: Inbox,
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "editor"})
    [message] = inbox.to(NEW_EMAIL)
    link = inbox.link_in(message)
    joined = await create_account(browsers(), "http://testserver" + _path(link))

    assert invitation_link(page.text) is None
    assert link.rsplit("/", 1)[1] not in page.text  # the token is in the mail alone
    assert f"Invitation sent to {NEW_EMAIL}" in page.text
    assert message["Subject"] == "Join Org on formsapi"
    assert joined.status_code == 303
    assert (await members_of(engine, organization.id))[NEW_EMAIL] == "editor"


async def test_a_mail_the_server_refuses_leaves_the_invitation_to_send_again(
    session: AsyncSession, signed_in: SignedIn, inbox: Inbox
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)
    inbox.refuse = True

    refused = await browser.submit("/settings/members", {"email": NEW_EMAIL, "role": "editor"})
    inbox.refuse = False
    again = await browser.submit(
        "/settings/members/invitations/"
        + refused.text.split("/settings/members/invitations/")[1].split("/")[0]
        + "/renew"
    )

    assert "is saved, but the mail could not be sent" in refused.text
    assert invitation_link(refused.text) is None
    assert f"Invitation sent to {NEW_EMAIL}" in again.text
    assert len(inbox.to(NEW_EMAIL)) == 1


async def _forgot(browsers: BrowserFactory, email: str, host: str | None = None) -> str:
    browser = browsers()
    form = await browser.get("/forgot-password")
    response = await browser.client.post(
        "/forgot-password",
        data={"email": email, "csrf_token": csrf_field(form.text)},
        headers={"Host": host} if host else None,
    )
    assert response.status_code == 200, response.text
    return response.text


async def test_a_forgotten_password_is_reset_through_a_mailed_link(
    session: AsyncSession, browsers: BrowserFactory, signed_in: SignedIn, inbox: Inbox
) -> None:
    organization = await create_org(session)
    user = await add_member(session, organization, Role.owner)
    await session.commit()
    elsewhere = await signed_in(user)  # a browser that knew the old password

    answer = await _forgot(browsers, user.email, host="evil.example")
    [message] = inbox.to(user.email)
    path = _path(inbox.link_in(message))
    resetter = browsers()
    form = await resetter.get(path)
    reset = await resetter.client.post(
        path,
        data={
            "new_password": NEW_PASSWORD,
            "confirm_password": NEW_PASSWORD,
            "csrf_token": csrf_field(form.text),
        },
    )
    welcome = await resetter.get(reset.headers["location"])

    assert f"If {user.email} has an account, we have sent it a link" in answer
    assert reset.status_code == 303
    assert "Your new password is set" in welcome.text
    assert (await elsewhere.get("/forms")).status_code == 303  # signed out: to sign in
    assert (await browsers().sign_in_attempt(user.email, PASSWORD)).status_code == 400
    assert (await browsers().sign_in_attempt(user.email, NEW_PASSWORD)).status_code == 303
    assert (await browsers().get(path)).status_code == 404  # the link works once


async def test_forgot_password_answers_alike_for_an_address_without_an_account(
    session: AsyncSession, browsers: BrowserFactory, inbox: Inbox
) -> None:
    user = await create_user(session)
    await session.commit()

    known = await _forgot(browsers, user.email)
    unknown = await _forgot(browsers, "nobody@example.com")

    assert known.replace(user.email, "X") == unknown.replace("nobody@example.com", "X")
    assert len(inbox.messages) == 1
    assert inbox.messages[0]["To"] == user.email


async def test_a_newer_reset_link_replaces_the_older(
    session: AsyncSession, browsers: BrowserFactory, inbox: Inbox
) -> None:
    user = await create_user(session)
    await session.commit()

    await _forgot(browsers, user.email)
    await _forgot(browsers, user.email)
    first, second = (_path(inbox.link_in(m)) for m in inbox.to(user.email))

    assert (await browsers().get(first)).status_code == 404
    assert (await browsers().get(second)).status_code == 200


async def test_creating_an_account_through_a_mailed_invitation_needs_no_other_check(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory, inbox: Inbox
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    await (await signed_in(owner)).submit(
        "/settings/members", {"email": NEW_EMAIL, "role": "viewer"}
    )
    [message] = inbox.to(NEW_EMAIL)

    await create_account(browsers(), "http://testserver" + _path(inbox.link_in(message)))

    assert (await browsers().sign_in_attempt(NEW_EMAIL, CHOSEN)).status_code == 303


@pytest.mark.parametrize(
    "address",
    ["new@example.com\r\nBcc: everyone@example.com", "a@example.com, b@example.com", "<a@b.co>"],
    ids=["header injection", "two recipients", "brackets"],
)
async def test_an_address_that_is_not_one_mailbox_is_refused(
    session: AsyncSession, signed_in: SignedIn, inbox: Inbox, address: str
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()

    page = await (await signed_in(owner)).submit(
        "/settings/members", {"email": address, "role": "viewer"}
    )

    assert "is not an email address" in page.text
    assert inbox.messages == []
