from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import User, WebSession


async def get_with_user(
    session: AsyncSession, session_id: str, now: datetime
) -> tuple[WebSession, User] | None:
    statement = (
        select(WebSession, User)
        .join(User, User.id == WebSession.user_id)
        .where(WebSession.id == session_id, WebSession.expires_at > now)
    )
    row = (await session.execute(statement)).first()
    return None if row is None else (row[0], row[1])


async def set_fields(session: AsyncSession, session_id: str, **values: Any) -> None:
    await session.execute(update(WebSession).where(WebSession.id == session_id).values(**values))


async def take_flash(session: AsyncSession, session_id: str, sealed: str) -> bool:
    """Clear the one-time message if it is still `sealed`; False when another
    request took it first."""
    cleared = await session.execute(
        update(WebSession)
        .where(WebSession.id == session_id, WebSession.flash == sealed)
        .values(flash=None)
        .returning(WebSession.id)
    )
    return cleared.first() is not None


async def delete_one(session: AsyncSession, session_id: str) -> None:
    await session.execute(delete(WebSession).where(WebSession.id == session_id))


async def delete_of_user(session: AsyncSession, user_id: str, keep: str | None = None) -> None:
    statement = delete(WebSession).where(WebSession.user_id == user_id)
    if keep is not None:
        statement = statement.where(WebSession.id != keep)
    await session.execute(statement)


async def delete_expired(session: AsyncSession, now: datetime) -> None:
    await session.execute(delete(WebSession).where(WebSession.expires_at <= now))
