from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Form


async def list_page(
    session: AsyncSession, organization_id: str, offset: int, limit: int
) -> Sequence[Form]:
    statement = (
        select(Form)
        .where(Form.organization_id == organization_id)
        .order_by(Form.created_at.desc(), Form.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def count(session: AsyncSession, organization_id: str) -> int:
    statement = (
        select(func.count()).select_from(Form).where(Form.organization_id == organization_id)
    )
    return int(await session.scalar(statement) or 0)


async def get(session: AsyncSession, organization_id: str, form_id: str) -> Form | None:
    statement = select(Form).where(Form.organization_id == organization_id, Form.id == form_id)
    return await session.scalar(statement)
