from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Membership, Organization


async def get(session: AsyncSession, organization_id: str) -> Organization | None:
    return await session.get(Organization, organization_id)


async def get_membership(
    session: AsyncSession, organization_id: str, user_id: str
) -> Membership | None:
    return await session.scalar(
        select(Membership).where(
            Membership.organization_id == organization_id, Membership.user_id == user_id
        )
    )
