"""Submission rows: one by id, the newest, deletes."""

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
    id: str
    submitted_at: datetime
    form_version: int
    answers: dict[str, Any]
    ending: str | None


async def delete_rows(
    session: AsyncSession, organization_id: str, form_id: str, submission_ids: Sequence[str]
) -> list[Deleted]:
    """Delete these submissions of the form; what the counts take off for
    each that was there, in the order of `submission_ids`."""
    deleted = await session.execute(
        delete(Submission)
        .where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.id.in_(submission_ids),
        )
        .returning(
            Submission.id,
            Submission.submitted_at,
            Submission.form_version,
            Submission.answers,
            Submission.ending,
        )
    )
    found = {row[0]: Deleted(*row) for row in deleted}
    return [found[id_] for id_ in dict.fromkeys(submission_ids) if id_ in found]


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


async def submitted_before(
    session: AsyncSession, organization_id: str, form_id: str, before: datetime, limit: int
) -> list[str]:
    """The ids of up to `limit` of the form's oldest submissions made before `before`."""
    statement = (
        select(Submission.id)
        .where(
            scoped(Submission, organization_id),
            Submission.form_id == form_id,
            Submission.submitted_at < before,
        )
        .order_by(Submission.submitted_at, Submission.id)
        .limit(limit)
    )
    return list((await session.scalars(statement)).all())
