from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Organization


async def get(session: AsyncSession, organization_id: str) -> Organization | None:
    return await session.get(Organization, organization_id)


async def set_embed_origins(
    session: AsyncSession, organization_id: str, origins: list[str]
) -> None:
    await session.execute(
        update(Organization).where(Organization.id == organization_id).values(embed_origins=origins)
    )


async def all_ids(session: AsyncSession) -> Sequence[str]:
    """Every organization: for maintenance that goes through them one by one."""
    return (await session.scalars(select(Organization.id).order_by(Organization.id))).all()
