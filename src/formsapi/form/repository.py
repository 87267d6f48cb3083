from collections.abc import Sequence
from datetime import datetime
from functools import cache

from sqlalchemy import Row, Select, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Form

SummaryRow = Row[str, str, str, str, int, datetime, int]


@cache
def _page_statement() -> Select[str, str, str, str, int, datetime, int]:
    """Built once; each row carries the organization's form count."""
    of_organization = Form.organization_id == bindparam("organization_id")
    total = select(func.count()).select_from(Form).where(of_organization).scalar_subquery()
    return (
        select(
            Form.id,
            Form.title,
            Form.slug,
            Form.status,
            Form.response_count,
            Form.created_at,
            total.label("total"),
        )
        .where(of_organization)
        .order_by(Form.created_at.desc(), Form.id.desc())
        .offset(bindparam("offset"))
        .limit(bindparam("limit"))
    )


async def list_page(
    session: AsyncSession, organization_id: str, offset: int, limit: int
) -> Sequence[SummaryRow]:
    connection = await session.connection()
    parameters = {"organization_id": organization_id, "offset": offset, "limit": limit}
    return (await connection.execute(_page_statement(), parameters)).all()


async def count(session: AsyncSession, organization_id: str) -> int:
    statement = (
        select(func.count()).select_from(Form).where(Form.organization_id == organization_id)
    )
    return int(await session.scalar(statement) or 0)


async def get(session: AsyncSession, organization_id: str, form_id: str) -> Form | None:
    statement = select(Form).where(Form.organization_id == organization_id, Form.id == form_id)
    return await session.scalar(statement)
