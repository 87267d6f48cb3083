"""Users: people who sign in and generate keys. Not tenant data: a user may
belong to several organizations through memberships."""

from pwdlib import PasswordHash
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, Conflict, NotFound
from formsapi.kit.ids import new_id
from formsapi.models import User
from formsapi.user import repository

MIN_PASSWORD_LENGTH = 10
_password_hash = PasswordHash.recommended()  # argon2id


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    local, _, domain = email.partition("@")
    if not local or "." not in domain or " " in email or len(email) > 320:
        raise BadRequest(f"'{email}' is not an email address.")
    return email


async def create(session: AsyncSession, email: str, password: str) -> User:
    email = normalize_email(email)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest(f"The password must have at least {MIN_PASSWORD_LENGTH} characters.")
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


def verify_password(user: User, password: str) -> bool:
    return user.password_hash is not None and _password_hash.verify(password, user.password_hash)
