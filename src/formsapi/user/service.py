"""Users: people who sign in and generate keys. Not tenant data: a user may
belong to several organizations through memberships."""

import asyncio

from pwdlib import PasswordHash
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, Conflict, NotFound
from formsapi.kit.ids import new_id
from formsapi.models import User
from formsapi.user import repository

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024  # argon2 takes any length; a cap keeps hashing cheap to refuse
_password_hash = PasswordHash.recommended()  # argon2id
# Verified when no account matches, so an unknown email costs what a wrong password does.
_DUMMY_HASH = _password_hash.hash("no account has this password")


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    local, _, domain = email.partition("@")
    if not local or "." not in domain or " " in email or len(email) > 320:
        raise BadRequest(f"'{email}' is not an email address.")
    return email


async def create(session: AsyncSession, email: str, password: str) -> User:
    email = normalize_email(email)
    check_password(password)
    if await repository.get_by_email(session, email) is not None:
        raise Conflict(f"A user with email '{email}' already exists.")
    user = User(id=new_id("usr"), email=email, password_hash=_password_hash.hash(password))
    session.add(user)
    await session.flush()
    return user


async def get_by_email(session: AsyncSession, email: str) -> User:
    user = await repository.get_by_email(session, email)
    if user is None:
        raise NotFound(f"No user with email '{email.strip().lower()}'.")
    return user


async def create_invited(session: AsyncSession, email: str) -> User:
    """A user without a password yet: they choose one through an invitation."""
    user = User(id=new_id("usr"), email=normalize_email(email), password_hash=None)
    session.add(user)
    await session.flush()
    return user


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest(f"The password must have at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadRequest(f"The password must have at most {MAX_PASSWORD_LENGTH} characters.")


def set_password(user: User, password: str) -> None:
    check_password(password)
    user.password_hash = _password_hash.hash(password)


def verify_password(user: User, password: str) -> bool:
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    return user.password_hash is not None and _password_hash.verify(password, user.password_hash)


async def authenticate(session: AsyncSession, email: str, password: str) -> User | None:
    """The user with this email and password, or None. Unknown emails, accounts
    without a password and wrong passwords take the same time and answer alike."""
    user = await repository.get_by_email(session, email)
    if user is None or user.password_hash is None or len(password) > MAX_PASSWORD_LENGTH:
        await verify_off_loop(password[:MAX_PASSWORD_LENGTH], _DUMMY_HASH)
        return None
    return user if await verify_off_loop(password, user.password_hash) else None


async def verify_off_loop(password: str, password_hash: str) -> bool:
    # argon2 takes tens of milliseconds of CPU: off the event loop, API requests
    # keep flowing while someone signs in.
    return await asyncio.to_thread(_password_hash.verify, password, password_hash)
