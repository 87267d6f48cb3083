"""Users: people who sign in and generate keys. Not tenant data: a user may
belong to several organizations through memberships.

Passwords are hashed with argon2id, off the event loop and before any
transaction begins: a hash takes tens of milliseconds of CPU, and a
transaction held across it would hold SQLite's write lock (or a pooled
PostgreSQL connection) that long.
"""

import asyncio
import re
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar
from weakref import WeakKeyDictionary

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, Conflict, NotFound
from formsapi.kit.crypto import hash_secret, new_link_token
from formsapi.kit.ids import new_id
from formsapi.kit.time import utcnow
from formsapi.models import PasswordReset, User
from formsapi.user import repository

T = TypeVar("T")

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024  # argon2 takes any length; a cap keeps hashing cheap to refuse
RESET_LIFETIME = timedelta(hours=1)
_password_hash = PasswordHash((Argon2Hasher(),))  # argon2id with the library's defaults
# Verified when no account matches, so an unknown email costs what a wrong
# password does. Made on first use (off the loop), not at import: every
# `formsapi` process imports this module, servers, workers and one-off
# commands alike, and a hash with the defaults costs a quarter of a second
# of CPU that most of them never need.
_dummy_hash: str | None = None


def use_hasher(hasher: Argon2Hasher) -> None:
    """Hash with other argon2 parameters: the tests' cheap ones. Hashes made
    earlier still verify (the parameters travel in each hash)."""
    global _password_hash, _dummy_hash
    _password_hash = PasswordHash((hasher,))
    _dummy_hash = None


def _verify_without_account(password: str) -> bool:
    """A wrong password's work, done against the dummy hash."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _password_hash.hash("no account has this password")
    return _password_hash.verify(password, _dummy_hash)


# An address as mail headers and our lookups take it: no whitespace, control
# characters, commas, quotes, brackets or colons (one recipient, nothing to
# inject); letters of any script are fine.
_LOCAL = r"[^\s@,;:<>()\[\]\\\"\x00-\x1f\x7f]"
_LABEL = r"[^\s@,;:<>()\[\]\\\"\x00-\x1f\x7f.]+"
_EMAIL = re.compile(rf"{_LOCAL}{{1,64}}@{_LABEL}(?:\.{_LABEL})+")


def canonical_email(email: str) -> str | None:
    """The address as stored (trimmed, lower case), or None if it is not one."""
    email = email.strip().lower()
    return email if len(email) <= 320 and _EMAIL.fullmatch(email) else None


def normalize_email(email: str) -> str:
    canonical = canonical_email(email)
    if canonical is None:
        raise BadRequest(f"'{email.strip()[:320]}' is not an email address.")
    return canonical


async def create(session: AsyncSession, email: str, password: str) -> User:
    email = normalize_email(email)
    password_hash = await hash_password(password)
    if await repository.get_by_email(session, email) is not None:
        raise Conflict(f"A user with email '{email}' already exists.")
    return await create_with_hash(session, email, password_hash)


async def create_with_hash(session: AsyncSession, email: str, password_hash: str) -> User:
    user = User(id=new_id("usr"), email=normalize_email(email), password_hash=password_hash)
    session.add(user)
    await session.flush()
    return user


async def find(session: AsyncSession, email: str) -> User | None:
    """The account with `email` (as canonical_email has it), if any."""
    canonical = canonical_email(email)
    return await repository.get_by_email(session, canonical) if canonical else None


async def set_password_hash(session: AsyncSession, user_id: str, password_hash: str) -> None:
    """Store a password hashed beforehand (hash_password), outside any transaction."""
    await repository.set_password_hash(session, user_id, password_hash)


async def set_first_password(session: AsyncSession, user_id: str, password_hash: str) -> bool:
    """Give an account its first password; False if it has one already."""
    return await repository.set_password_hash(session, user_id, password_hash, only_if_none=True)


async def get_by_email(session: AsyncSession, email: str) -> User:
    user = await repository.get_by_email(session, email)
    if user is None:
        raise NotFound(f"No user with email '{email.strip().lower()}'.")
    return user


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest(f"The password must have at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadRequest(f"The password must have at most {MAX_PASSWORD_LENGTH} characters.")


# argon2 takes tens of megabytes and milliseconds a hash: at most two run at
# once on an event loop, so a flood of posts queues instead of taking every
# core and the memory with it. (One semaphore a loop: a semaphore is bound to
# the loop it first waits on.)
_HASHING: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = WeakKeyDictionary()


async def _off_loop(work: Callable[..., T], *args: str) -> T:
    limit = _HASHING.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(2))
    async with limit:
        return await asyncio.to_thread(work, *args)


async def hash_password(password: str) -> str:
    """The hash of an acceptable password (BadRequest otherwise), computed off the loop."""
    check_password(password)
    return await _off_loop(_password_hash.hash, password)


async def hash_passphrase(text: str) -> str:
    """The argon2 hash of a password not an account's (a form's PIN), whose
    length its caller checked: off the loop, like every hash."""
    return await _off_loop(_password_hash.hash, text[:MAX_PASSWORD_LENGTH])


async def verify_passphrase(text: str, hashed: str) -> bool:
    """Whether `text` is the passphrase of `hashed` (hash_passphrase)."""
    return await _off_loop(_password_hash.verify, text[:MAX_PASSWORD_LENGTH], hashed)


async def verify_password(user: User | None, password: str) -> bool:
    """Whether `password` is `user`'s. No user, an account without a password and
    a wrong password take the same time and answer alike."""
    if user is None or user.password_hash is None or len(password) > MAX_PASSWORD_LENGTH:
        await _off_loop(_verify_without_account, password[:MAX_PASSWORD_LENGTH])
        return False
    return await _off_loop(_password_hash.verify, password, user.password_hash)


async def start_reset(session: AsyncSession, email: str) -> tuple[User, str] | None:
    """A password reset link's token for the account with `email`, or None when
    there is no account with a password to reset (the caller answers alike)."""
    user = await repository.get_by_email(session, normalize_email(email))
    if user is None or user.password_hash is None:
        return None
    now = utcnow()
    await repository.delete_expired_resets(session, now)
    await repository.delete_resets_of(session, user.id)  # the newest link is the one that works
    token, token_hash = new_link_token()
    session.add(
        PasswordReset(
            id=token_hash, user_id=user.id, created_at=now, expires_at=now + RESET_LIFETIME
        )
    )
    await session.flush()
    return user, token


class NoPassword(NotFound):
    def __init__(self, email: str) -> None:
        super().__init__(f"No account with a password has the email '{email.strip().lower()}'.")


class ResetNotValid(NotFound):
    def __init__(self) -> None:
        super().__init__(
            "This password reset link is not valid: it was used, it expired, or a newer one "
            "was sent. Ask for a new one."
        )


async def open_reset(session: AsyncSession, token: str) -> User:
    user = await repository.find_reset(session, hash_secret(token), utcnow())
    if user is None:
        raise ResetNotValid()
    return user


async def finish_reset(session: AsyncSession, token: str, password_hash: str) -> User:
    """Set the new password (hashed beforehand); every reset link of the account
    stops working. The caller signs the account out everywhere."""
    user = await repository.find_reset(session, hash_secret(token), utcnow(), for_update=True)
    if user is None:
        raise ResetNotValid()
    user.password_hash = password_hash
    await repository.delete_resets_of(session, user.id)
    await session.flush()
    return user
