"""The settings area driven as a browser without JavaScript would: GET a page,
POST its form fields with the page's CSRF token, follow the 303.

Several browsers (each an httpx client with its own cookie jar) share one app,
so they share its in-process state too: the sign-in throttle and the API key
cache. The `api` fixture is redefined here on that same app.
"""

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import release
from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.member import service as member_service
from formsapi.models import Membership, Organization, User
from tests.conftest import Api, app_on
from tests.support.contract import Contract
from tests.support.factories import create_user

PASSWORD = "correct horse battery"  # what tests.support.factories.create_user gives everyone
SESSION_COOKIE = "formsapi_session"
CSRF_COOKIE = "formsapi_csrf"
BASE_URL = "http://testserver"
_SECRET_BOX = re.compile(r'id="new-key" type="text" readonly value="([^"]+)"')
_INVITATION_LINK = re.compile(r'id="invite-link" type="text" readonly value="([^"]+)"')


def hidden_field(html: str, name: str) -> str:
    """The value of the page's (first) hidden input called `name`."""
    match = re.search(rf'type="hidden" name="{name}" value="([^"]*)"', html)
    assert match, f"the page has no hidden {name} field"
    return match.group(1)


def csrf_field(html: str) -> str:
    return hidden_field(html, "csrf_token")


def new_key_secret(html: str) -> str | None:
    """The secret of a key just generated, as the keys page shows it, or None."""
    match = _SECRET_BOX.search(html)
    return match.group(1) if match else None


def invitation_link(html: str) -> str | None:
    """The invitation URL the members page shows once, or None."""
    match = _INVITATION_LINK.search(html)
    return match.group(1) if match else None


def path_of(url: str) -> str:
    return url.removeprefix(BASE_URL)


CHOSEN = "my own chosen password"


async def invite(browser: "Browser", email: str, role: str) -> str:
    """Invite `email` from the members page; the link it shows once."""
    page = await browser.submit("/settings/members", {"email": email, "role": role})
    link = invitation_link(page.text)
    assert link is not None, page.text
    return link


async def create_account(browser: "Browser", link: str, password: str = CHOSEN) -> httpx.Response:
    """Open an invitation link signed out and create the invited account through it."""
    form = await browser.get(path_of(link))
    if 'name="new_password"' not in form.text:  # no such form offered: forge the post
        form = await browser.get("/sign-in")
    return await browser.client.post(
        path_of(link),
        data={
            "new_password": password,
            "confirm_password": password,
            "csrf_token": csrf_field(form.text),
        },
    )


@dataclass
class Browser:
    """One person's browser: its cookies, and the CSRF token of its session."""

    client: httpx.AsyncClient
    csrf: str = ""

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client.get(path, **kwargs)

    async def post(
        self,
        path: str,
        data: dict[str, Any] | None = None,
        *,
        csrf: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """POST a page's form, with this session's token unless `csrf` is given
        (pass "" to leave the field out)."""
        fields = dict(data or {})
        token = self.csrf if csrf is None else csrf
        if token:
            fields["csrf_token"] = token
        return await self.client.post(path, data=fields, headers=headers)

    async def submit(self, path: str, data: dict[str, Any] | None = None) -> httpx.Response:
        """POST, check it answered 303 (post/redirect/get), and GET where it points."""
        posted = await self.post(path, data)
        assert posted.status_code == 303, posted.text
        return await self.get(posted.headers["location"])

    async def sign_in_attempt(
        self, email: str, password: str = PASSWORD, next: str = "/forms"
    ) -> httpx.Response:
        form = await self.get(f"/sign-in?next={next}")
        return await self.client.post(
            "/sign-in",
            data={
                "email": email,
                "password": password,
                "csrf_token": csrf_field(form.text),
                "next": next,
            },
        )

    async def sign_in(self, email: str, password: str = PASSWORD) -> "Browser":
        """Sign in and keep the session's CSRF token (read from a page) for posts."""
        response = await self.sign_in_attempt(email, password)
        assert response.status_code == 303, response.text
        account = await self.get("/settings/account")
        assert account.status_code == 200
        self.csrf = csrf_field(account.text)
        return self

    @property
    def session_cookie(self) -> str | None:
        return self.client.cookies.get(SESSION_COOKIE)


BrowserFactory = Callable[..., Browser]


@pytest.fixture
async def app(engine: AsyncEngine, settings: Settings) -> AsyncIterator[FastAPI]:
    app = app_on(engine, settings)
    yield app
    await release(app)


@pytest.fixture
async def api(app: FastAPI, settings: Settings, contract: Contract) -> AsyncIterator[Api]:
    """The root fixture's client, built on the app the browsers use."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=BASE_URL
    ) as client:
        yield Api(client, settings, contract)


@pytest.fixture
async def browsers(app: FastAPI) -> AsyncIterator[BrowserFactory]:
    """Open a new browser (a fresh cookie jar) on the app; closed after the test."""
    clients: list[httpx.AsyncClient] = []

    def open_browser(cookies: dict[str, str] | None = None) -> Browser:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=BASE_URL, cookies=cookies
        )
        clients.append(client)
        return Browser(client)

    yield open_browser
    for client in clients:
        await client.aclose()


@pytest.fixture
def browser(api: Api) -> Browser:
    """A browser on the `api` fixture's client."""
    return Browser(api.client)


SignedIn = Callable[[User], Awaitable[Browser]]


@pytest.fixture
def signed_in(browsers: BrowserFactory) -> SignedIn:
    """A new browser signed in as `user`."""

    async def sign_in(user: User) -> Browser:
        return await browsers().sign_in(user.email)

    return sign_in


async def add_member(
    session: AsyncSession, organization: Organization, role: str, user: User | None = None
) -> User:
    """A user (new unless given) with `role` in `organization`."""
    user = user or await create_user(session)
    await member_service.add_directly(session, organization.id, user, role)
    return user


async def members_of(engine: AsyncEngine, organization_id: str) -> dict[str, str]:
    """Email -> role of every member, read afresh from the database."""
    async with create_sessionmaker(engine)() as session:
        rows = await session.execute(
            select(User.email, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.organization_id == organization_id)
        )
        return {email: str(role) for email, role in rows}
