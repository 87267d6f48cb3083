"""Reading submissions of one form, most recent first."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import Conflict, NotFound, ValidationFailed
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.form.blocks import BlockList
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.models import Submission
from formsapi.submission import repository
from formsapi.submission.repository import PageRow, hour_of
from formsapi.submission.schemas import wire
from formsapi.submission.validation import validate_answers

# From this offset on, the page is found through the hourly counts: skipping
# rows one by one costs as much as the offset is deep.
SEEK_FROM = 500


async def page_document(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    page: PageParams,
    since: datetime | None,
) -> bytes:
    """The JSON body of one page with its exact total: one query for shallow
    pages with rows, two for deep ones.

    Measured on PostgreSQL, returning rows and encoding here with orjson costs
    the machine less than having the database build the JSON (bench/RESULTS.md)."""
    rows: Sequence[PageRow] = ()
    offset, before, past_the_end = page.offset, None, False
    if offset >= SEEK_FROM:
        found = await repository.seek(session, organization_id, form_id, since, offset)
        if found is None:
            past_the_end = True
        else:
            before, newer = found
            offset -= newer
    if not past_the_end:
        rows = await repository.list_page(
            session, organization_id, form_id, since, offset, page.limit, before
        )
    if rows:
        total = rows[0][5]
    else:
        # An empty page: tell a missing form (404) from one with fewer rows.
        await form_service.get(session, organization_id, form_id)
        total = await repository.total(session, organization_id, form_id, since)
    return orjson.dumps(
        {
            "data": [
                wire(id_, form_id_, version, submitted_at, orjson.Fragment(answers))
                for id_, form_id_, version, submitted_at, answers, _ in rows
            ],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


class FormNotAccepting(Conflict):
    """Only published forms take submissions; `formStatus` says what this one
    is. Publish it (PATCH its status) first."""

    title = "Form not accepting submissions"
    slug = "form-not-accepting"


class SubmissionNotFound(NotFound):
    def __init__(self, submission_id: str) -> None:
        super().__init__(f"No submission with id '{submission_id}' in this form.")


async def create(
    session: AsyncSession, organization_id: str, form_id: str, answers: dict[str, object]
) -> Submission:
    """Store answers to a published form, checked against its current blocks.

    The form's counter, its hourly and daily counts and the row move in one
    transaction; invalid answers roll them all back."""
    locked = (
        await form_repository.lock_for_submission(session, organization_id, form_id)
        if is_plausible(form_id)
        else None
    )
    if locked is None:
        form = await form_service.get(session, organization_id, form_id)  # 404 if missing
        raise FormNotAccepting(
            f"This form is {form.status}; only published forms take submissions.",
            formStatus=form.status,
        )
    _, version, raw_blocks = locked
    stored, errors = validate_answers(BlockList.validate_python(raw_blocks), answers)
    if errors:
        raise ValidationFailed("The answers are invalid.", [e.as_dict() for e in errors])
    now = utcnow()
    submission = Submission(
        id=new_id("sub"),
        organization_id=organization_id,
        form_id=form_id,
        form_version=version,
        submitted_at=now,
        answers=stored,
    )
    await repository.insert_counted(session, submission)
    return submission


async def recent(
    session: AsyncSession, organization_id: str, form_id: str, limit: int
) -> Sequence[Submission]:
    """The newest submissions of one form, newest first."""
    return await repository.recent(session, organization_id, form_id, limit)


async def get(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> Submission:
    found = None
    if is_plausible(form_id) and is_plausible(submission_id):
        found = await repository.get(session, organization_id, form_id, submission_id)
    if found is None:
        await form_service.get(session, organization_id, form_id)  # a missing form says so
        raise SubmissionNotFound(submission_id)
    return found


async def delete(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> None:
    """Delete one submission and take it off every total, exactly once.

    The form's counter moves first: that takes the form's row lock, so
    concurrent deletes of the same submission (and a delete of the form) are
    ordered; whichever finds the row already gone answers 404, and its
    rollback restores the counter."""
    if not (is_plausible(form_id) and is_plausible(submission_id)):
        raise SubmissionNotFound(submission_id)
    if not await form_repository.add_to_count(session, organization_id, form_id, -1):
        await form_service.get(session, organization_id, form_id)  # raises: no such form
    submitted_at = await repository.delete_row(session, organization_id, form_id, submission_id)
    if submitted_at is None:
        raise SubmissionNotFound(submission_id)
    await repository.add_counts(session, organization_id, form_id, {hour_of(submitted_at): -1})


def to_dict(submission: Submission) -> dict[str, Any]:
    return wire(
        submission.id,
        submission.form_id,
        submission.form_version,
        isoformat_z(submission.submitted_at),
        submission.answers,
    )
