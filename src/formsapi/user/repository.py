from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import PasswordReset, User


async def get_by_email(session: AsyncSession, email: str) -> User | None:
    return await session.scalar(select(User).where(User.email == email.strip().lower()))


async def set_password_hash(
    session: AsyncSession, user_id: str, password_hash: str, *, only_if_none: bool = False
) -> bool:
    """Whether the account now has this password (with `only_if_none`, not when
    it had one already: a condition the database checks as it writes)."""
    statement = update(User).where(User.id == user_id)
    if only_if_none:
        statement = statement.where(User.password_hash.is_(None))
    changed = await session.execute(
        statement.values(password_hash=password_hash).returning(User.id)
    )
    return changed.first() is not None


async def find_reset(
    session: AsyncSession, reset_id: str, now: datetime, *, for_update: bool = False
) -> User | None:
    """The account an unexpired reset link is for."""
    statement = (
        select(User)
        .join(PasswordReset, PasswordReset.user_id == User.id)
        .where(PasswordReset.id == reset_id, PasswordReset.expires_at > now)
    )
    if for_update:
        statement = statement.with_for_update(of=User)
    return await session.scalar(statement)


async def delete_resets_of(session: AsyncSession, user_id: str) -> None:
    await session.execute(delete(PasswordReset).where(PasswordReset.user_id == user_id))


async def delete_expired_resets(session: AsyncSession, now: datetime) -> None:
    await session.execute(delete(PasswordReset).where(PasswordReset.expires_at <= now))
