"""The SQL of report links."""

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import ReportLink
from formsapi.tenancy import scoped, unscoped


async def add(session: AsyncSession, link: ReportLink) -> None:
    session.add(link)
    await session.flush()


async def of_form(
    session: AsyncSession, organization_id: str, form_id: str
) -> Sequence[ReportLink]:
    statement = (
        select(ReportLink)
        .where(scoped(ReportLink, organization_id), ReportLink.form_id == form_id)
        .order_by(ReportLink.created_at.desc(), ReportLink.id.desc())
    )
    return (await session.scalars(statement)).all()


async def get(
    session: AsyncSession, organization_id: str, form_id: str, link_id: str
) -> ReportLink | None:
    found: ReportLink | None = await session.scalar(
        select(ReportLink).where(
            scoped(ReportLink, organization_id),
            ReportLink.form_id == form_id,
            ReportLink.id == link_id,
        )
    )
    return found


async def by_token(session: AsyncSession, token_hash: bytes) -> ReportLink | None:
    statement = unscoped(
        select(ReportLink).where(ReportLink.token_hash == token_hash),
        "a public report's link finds its organization",
    )
    found: ReportLink | None = await session.scalar(statement)
    return found
