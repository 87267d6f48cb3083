"""Submission rows: one by id, the newest, a delete."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Submission
from formsapi.tenancy import scoped


async def get(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> Submission | None:
    return await session.scalar(
        select(Submission).where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.id == submission_id,
        )
    )


class Deleted(NamedTuple):
    submitted_at: datetime
    form_version: int
    answers: dict[str, Any]
    ending: str | None


async def delete_row(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> Deleted | None:
    """Delete one submission; what the counts take off, or None if there
    was none to delete."""
    deleted = await session.execute(
        delete(Submission)
        .where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.id == submission_id,
        )
        .returning(
            Submission.submitted_at, Submission.form_version, Submission.answers, Submission.ending
        )
    )
    row = deleted.one_or_none()
    return None if row is None else Deleted(*row)


async def recent(
    session: AsyncSession, organization_id: str, form_id: str, limit: int
) -> Sequence[Submission]:
    statement = (
        select(Submission)
        .where(scoped(Submission, organization_id), Submission.form_id == form_id)
        .order_by(Submission.submitted_at.desc(), Submission.id.desc())
        .limit(limit)
    )
    return (await session.scalars(statement)).all()
