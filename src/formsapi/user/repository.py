from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import User


async def get_by_email(session: AsyncSession, email: str) -> User | None:
    return await session.scalar(select(User).where(User.email == email.strip().lower()))
