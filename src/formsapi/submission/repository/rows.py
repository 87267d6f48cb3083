"""Submission rows: one by id, the newest, and the export's chunks."""

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import (
    Row,
    delete,
    select,
    tuple_,
)
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


async def delete_row(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> datetime | None:
    """Delete one submission; its time, or None if there was none to delete."""
    deleted = await session.execute(
        delete(Submission)
        .where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.id == submission_id,
        )
        .returning(Submission.submitted_at)
    )
    return deleted.scalar_one_or_none()


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


ExportRow = Row[str, int, datetime, dict[str, object]]


async def export_chunk(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    after: tuple[datetime, str] | None,
    limit: int,
) -> Sequence[ExportRow]:
    """The next `limit` submissions, newest first, after the (time, id) of the
    last one read: a seek on the page index, equally fast at any depth."""
    statement = select(
        Submission.id, Submission.form_version, Submission.submitted_at, Submission.answers
    ).where(scoped(Submission, organization_id), Submission.form_id == form_id)
    if after is not None:
        statement = statement.where(
            tuple_(Submission.submitted_at, Submission.id) < tuple_(after[0], after[1])
        )
    statement = statement.order_by(Submission.submitted_at.desc(), Submission.id.desc()).limit(
        limit
    )
    return (await session.execute(statement)).all()
