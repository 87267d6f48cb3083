from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Submission


def _of_form(
    organization_id: str, form_id: str, since: datetime | None
) -> list[ColumnElement[bool]]:
    conditions = [Submission.organization_id == organization_id, Submission.form_id == form_id]
    if since is not None:
        conditions.append(Submission.submitted_at > since)
    return conditions


async def list_page(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    since: datetime | None,
    offset: int,
    limit: int,
) -> Sequence[Submission]:
    statement = (
        select(Submission)
        .where(*_of_form(organization_id, form_id, since))
        .order_by(Submission.submitted_at.desc(), Submission.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def count(
    session: AsyncSession, organization_id: str, form_id: str, since: datetime | None
) -> int:
    statement = (
        select(func.count())
        .select_from(Submission)
        .where(*_of_form(organization_id, form_id, since))
    )
    return int(await session.scalar(statement) or 0)
