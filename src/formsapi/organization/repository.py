from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Organization


async def get(session: AsyncSession, organization_id: str) -> Organization | None:
    return await session.get(Organization, organization_id)
