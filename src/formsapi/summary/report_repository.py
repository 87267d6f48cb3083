"""The SQL of report links."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import ReportLink, Submission
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


async def submitted_since(
    session: AsyncSession, organization_id: str, form_id: str, since: datetime, enough: int
) -> int:
    """The form's submissions made at or after `since`, counted up to
    `enough` (a walk of at most that many index entries)."""
    made = (
        select(Submission.id)
        .where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.submitted_at >= since,
        )
        .limit(enough)
        .subquery()
    )
    return int(await session.scalar(select(func.count()).select_from(made)) or 0)


async def release(
    session: AsyncSession,
    organization_id: str,
    link_id: str,
    figures: dict[str, Any],
    now: datetime,
    not_since: datetime,
) -> bool:
    """Keep `figures` as the link's release, unless it was released at or
    after `not_since` (by another reader meanwhile); whether they were kept."""
    statement = (
        update(ReportLink)
        .where(
            scoped(ReportLink, organization_id),
            ReportLink.id == link_id,
            or_(ReportLink.released_at.is_(None), ReportLink.released_at < not_since),
        )
        .values(release=figures, released_at=now)
        .execution_options(synchronize_session=False)
    )
    result: Any = await session.execute(statement)
    return bool(result.rowcount)


async def released(
    session: AsyncSession, organization_id: str, link_id: str
) -> tuple[datetime, dict[str, Any]] | None:
    """The link's release as it stands: when, and its figures."""
    statement = select(ReportLink.released_at, ReportLink.release).where(
        scoped(ReportLink, organization_id), ReportLink.id == link_id
    )
    row = (await session.execute(statement)).one_or_none()
    if row is None or row.released_at is None or row.release is None:
        return None
    return row.released_at, row.release
