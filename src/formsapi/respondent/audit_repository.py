"""The SQL of audit entries."""

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import AuditEntry
from formsapi.tenancy import scoped


async def add(session: AsyncSession, entry: AuditEntry) -> None:
    session.add(entry)
    await session.flush()


async def recent(session: AsyncSession, organization_id: str, limit: int) -> Sequence[AuditEntry]:
    """The organization's newest entries, newest first."""
    statement = (
        select(AuditEntry)
        .where(scoped(AuditEntry, organization_id))
        .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
        .limit(limit)
    )
    return (await session.scalars(statement)).all()
