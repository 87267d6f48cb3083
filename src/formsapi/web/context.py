"""What every page of the settings area shares: the database sessions, the
signed-in person and their active organization, CSRF checks, and rendering.

Pages are server-rendered and work without JavaScript. Every state-changing
form posts a per-session CSRF token (the sign-in and invitation forms, which
come before a session, a double-submit cookie), and a cross-site Origin is
refused outright. Responses are never cached: a page may carry a secret.

A page that only reads uses an autocommit session (ReadDep); a page that
writes uses a transaction (DbDep) that begins at its first statement and
commits before the response, and never holds both at once (a request with two
pooled connections can starve the pool). The posted form is read in full
before either is used, and passwords are hashed and checked before the
transaction, so no transaction (and on SQLite no write lock) is held while a
client sends or the CPU hashes.
"""

import hmac
import logging
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import Depends, Form, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.db.session import ReadSession, session_scope
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.schemas import CleanStr
from formsapi.member import service as member_service
from formsapi.models import APIKey, Organization, User
from formsapi.services import services
from formsapi.web_session import service as web_session_service
from formsapi.web_session.service import SignedIn

log = logging.getLogger("formsapi")

SESSION_COOKIE = "formsapi_session"
CSRF_COOKIE = "formsapi_csrf"  # forms shown before there is a session
CSRF_FIELD = "csrf_token"
# A text field of a posted form; longer input, NUL and lone surrogates are
# refused before any handler runs.
FormText = Annotated[CleanStr, Form(max_length=2000)]
# An id in a page's path: one that cannot name a row is refused as it arrives.
PathId = Annotated[str, PathParam(pattern=ID_PATTERN)]

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.filters["when"] = lambda value: (
    value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else "never"
)

# Characters that would act or hide instead of showing as themselves: C0
# controls (but tab, newline and CRLF, which a <pre> shows as they are), DEL,
# C1 controls; and invisible format characters (soft hyphen, zero-width ones,
# bidi marks, embeddings, overrides and isolates, line and paragraph
# separators, the BOM, tag characters), which make text read differently than
# it is: an override shows what follows it reversed.
_UNSEEN = re.compile(
    r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u200b-\u200f"
    r"\u2028-\u202e\u2060-\u206f\ufeff\U000e0000-\U000e007f]"
)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def visible(text: str) -> Markup:
    r"""`text` (a receiver's answer, an error) with the characters that would
    not show as themselves written as JSON writes them (ESC as \u001b), then
    HTML-escaped. Backslashes stay as they are, so the text reads as it was
    sent (a literal \u001b in it reads like an escaped ESC)."""
    return escape(_UNSEEN.sub(_json_escape, text))


templates.env.filters["visible"] = visible

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


class SignInRequired(Exception):
    """Raised by pages that need a session; answered with a redirect to sign in."""

    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


class BadCSRF(Exception):
    """A state-changing post without this session's token, or from another site."""


async def _db(request: Request) -> AsyncIterator[AsyncSession]:
    # Committed when the page's handler returns, before the response is sent.
    state = services(request)
    async with session_scope(state.sessionmaker, state.auth_epoch.after_commit) as session:
        yield session


async def _read(request: Request) -> AsyncIterator[ReadSession]:
    async with services(request).read_sessionmaker() as session:
        yield session


DbDep = Annotated[AsyncSession, Depends(_db, scope="function")]
ReadDep = Annotated[ReadSession, Depends(_read, scope="function")]


@dataclass
class Viewer:
    """The signed-in person, where they are, and the page's one-time message."""

    signed_in: SignedIn
    organizations: list[tuple[Organization, str]]
    organization: Organization | None
    role: str | None
    flash: dict[str, Any] = field(default_factory=dict)

    @property
    def user(self) -> User:
        return self.signed_in.user

    @property
    def csrf_token(self) -> str:
        return self.signed_in.web_session.csrf_token

    # What the active organization's role allows, for the templates to ask
    # (member_service holds the rules; a page never compares role names).

    @property
    def can_manage_members(self) -> bool:
        return self.role is not None and member_service.can_manage_members(self.role)

    @property
    def can_manage_webhooks(self) -> bool:
        return self.role is not None and member_service.can_manage_webhooks(self.role)

    @property
    def can_edit_forms(self) -> bool:
        return self.role is not None and member_service.can_edit_forms(self.role)

    @property
    def can_share_reports(self) -> bool:
        return self.role is not None and member_service.can_share_reports(self.role)

    @property
    def can_manage_organization(self) -> bool:
        return self.role is not None and member_service.can_manage_organization(self.role)

    def can_change_member(self, member_role: str) -> bool:
        """May change the role of, or remove, a member (or their invitation)."""
        return self.role is not None and member_service.can_change_member(self.role, member_role)

    def can_revoke(self, key: APIKey) -> bool:
        return key.user_id == self.user.id or (
            self.role is not None and member_service.can_manage_keys(self.role)
        )


def same_origin(request: Request) -> bool:
    """A browser posting from another site names it in Origin; refuse that."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:  # "http://[": no origin a browser sends
        return False
    return netloc == request.headers.get("host", "")


async def get_viewer(request: Request, session: ReadDep) -> Viewer:
    # The whole form first (bounded in size and time by the RequestBody
    # middleware): nothing below waits on the client.
    posted = await request.form() if request.method == "POST" else None
    signed_in = await web_session_service.resume(session, request.cookies.get(SESSION_COOKIE))
    if signed_in is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(target if request.method == "GET" else "/")
    if posted is not None:
        submitted = posted.get(CSRF_FIELD)
        valid = isinstance(submitted, str) and web_session_service.csrf_matches(
            signed_in, submitted
        )
        if not same_origin(request) or not valid:
            raise BadCSRF()
    organizations = [
        (organization, role)
        for organization, role in await member_service.organizations_of(session, signed_in.user.id)
    ]
    active = next(
        ((o, r) for o, r in organizations if o.id == signed_in.web_session.organization_id),
        organizations[0] if organizations else None,
    )
    # Its connection goes back now: a page that writes takes one for its
    # transaction, and a request holding two could starve the pool.
    await session.close()
    moved = active is not None and signed_in.web_session.organization_id != active[0].id
    flash = None
    if moved or (request.method == "GET" and signed_in.web_session.flash is not None):
        # A short write of its own: the page itself only reads.
        async with write_scope(request) as writer:
            if active is not None and moved:
                await web_session_service.set_organization(writer, signed_in, active[0].id)
            if request.method == "GET":
                flash = await web_session_service.pop_flash(writer, signed_in)
    viewer = Viewer(
        signed_in,
        organizations,
        active[0] if active else None,
        active[1] if active else None,
        flash or {},
    )
    request.state.viewer = viewer  # for the answer to whatever the page raises
    return viewer


ViewerDep = Annotated[Viewer, Depends(get_viewer)]


def render(
    request: Request, template: str, viewer: Viewer | None, status: int = 200, **context: Any
) -> HTMLResponse:
    response = templates.TemplateResponse(
        request, template, {"viewer": viewer, **context}, status_code=status
    )
    response.headers.update(SECURITY_HEADERS)
    return response


def see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers={"Cache-Control": "no-store"})


async def back_with(
    session: AsyncSession, viewer: Viewer, path: str, **message: Any
) -> RedirectResponse:
    """Post/redirect/get: the next page shows `message` once."""
    await web_session_service.put_flash(session, viewer.signed_in, message)
    return see_other(path)


def public_link(request: Request, path: str) -> str:
    """An absolute link for mail: on the configured public address, never the
    request's Host header, which whoever sends the request chooses."""
    settings: Settings = services(request).settings
    return settings.public_url.rstrip("/") + path


def shown_link(request: Request, path: str) -> str:
    """An absolute link shown to the signed-in person on this page."""
    return str(request.base_url).rstrip("/") + path


def write_scope(request: Request) -> AbstractAsyncContextManager[AsyncSession]:
    """A transaction of its own, for the few writes a page makes outside DbDep."""
    state = services(request)
    return session_scope(state.sessionmaker, state.auth_epoch.after_commit)


def set_session_cookie(request: Request, response: Response, token: str | None) -> None:
    secure = request.url.scheme == "https"
    if token is None:
        response.delete_cookie(SESSION_COOKIE, path="/", secure=secure, httponly=True)
        return
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(web_session_service.LIFETIME.total_seconds()),
        path="/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )


def anonymous_csrf(request: Request) -> str:
    """The double-submit token of forms shown before sign-in (reused while the cookie lasts)."""
    return request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)


def set_anonymous_csrf(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        CSRF_COOKIE,
        token,
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


async def anonymous_csrf_valid(request: Request) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE)
    submitted = (await request.form()).get(CSRF_FIELD)
    return (
        same_origin(request)
        and bool(cookie)
        and isinstance(submitted, str)
        and hmac.compare_digest(str(cookie).encode(), submitted.encode())
    )


def sign_in_path(next_path: str) -> str:
    return "/sign-in" + (f"?next={quote(next_path, safe='/')}" if next_path != "/" else "")
