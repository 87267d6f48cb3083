"""Browser sessions of the settings area: signed in by password, revocable on
the server, each with its CSRF token and a one-time encrypted message.

The cookie carries a random token; the database keeps its SHA-256 as the row
id, so reading the table signs nobody in. A one-time message (the secret of a
key just generated, an invitation link) is encrypted with a key derived from
that token: it can only be read back by the browser holding the cookie, and
never rests in the clear.
"""

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import utcnow
from formsapi.models import User, WebSession
from formsapi.web_session import repository

LIFETIME = timedelta(days=14)


@dataclass(frozen=True, slots=True)
class SignedIn:
    web_session: WebSession
    user: User
    token: str  # the cookie's value


def _session_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _cipher(token: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"formsapi flash").derive(
        token.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


async def start(session: AsyncSession, user: User, organization_id: str | None) -> SignedIn:
    """A new session for `user`; expired sessions of anyone are swept on the way."""
    now = utcnow()
    await repository.delete_expired(session, now)
    token = secrets.token_urlsafe(32)
    web_session = WebSession(
        id=_session_id(token),
        user_id=user.id,
        organization_id=organization_id,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + LIFETIME,
    )
    session.add(web_session)
    await session.flush()
    return SignedIn(web_session, user, token)


async def resume(session: AsyncSession, token: str | None) -> SignedIn | None:
    if not token or len(token) > 100:
        return None
    row = await repository.get_with_user(session, _session_id(token), utcnow())
    return None if row is None else SignedIn(row[0], row[1], token)


async def end(session: AsyncSession, token: str) -> None:
    await repository.delete_one(session, _session_id(token))


async def end_others(session: AsyncSession, signed_in: SignedIn) -> None:
    """Sign the user out everywhere but here (after a password change)."""
    await repository.delete_of_user(session, signed_in.user.id, keep=signed_in.web_session.id)


async def end_all_of(session: AsyncSession, user_id: str) -> None:
    await repository.delete_of_user(session, user_id)


def csrf_matches(signed_in: SignedIn, submitted: str | None) -> bool:
    return bool(submitted) and hmac.compare_digest(
        signed_in.web_session.csrf_token.encode(), str(submitted).encode()
    )


async def put_flash(session: AsyncSession, signed_in: SignedIn, message: dict[str, Any]) -> None:
    sealed = _cipher(signed_in.token).encrypt(json.dumps(message).encode()).decode()
    await repository.set_fields(session, signed_in.web_session.id, flash=sealed)


async def pop_flash(session: AsyncSession, signed_in: SignedIn) -> dict[str, Any] | None:
    """The one-time message, removed as it is read: a reload, or a second
    request racing this one, finds nothing."""
    sealed = signed_in.web_session.flash
    if sealed is None or not await repository.take_flash(session, signed_in.web_session.id, sealed):
        return None
    try:
        message: dict[str, Any] = json.loads(_cipher(signed_in.token).decrypt(sealed.encode()))
    except (InvalidToken, ValueError):
        return None
    return message


async def set_organization(
    session: AsyncSession, signed_in: SignedIn, organization_id: str | None
) -> None:
    """The organization everything the settings area shows and makes belongs to."""
    await repository.set_fields(session, signed_in.web_session.id, organization_id=organization_id)
    signed_in.web_session.organization_id = organization_id
