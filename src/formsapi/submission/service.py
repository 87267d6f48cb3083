"""Reading submissions of one form, most recent first."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z
from formsapi.models import Submission
from formsapi.submission import repository


async def list_page(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    page: PageParams,
    since: datetime | None,
) -> tuple[Sequence[Submission], int]:
    form = await form_service.get(session, organization_id, form_id)
    rows = await repository.list_page(
        session, organization_id, form.id, since, page.offset, page.limit
    )
    if since is None:
        # The form's counter is kept exact with every write: no count over the rows.
        total = form.response_count
    elif page.offset == 0 and len(rows) < page.limit:
        total = len(rows)
    else:
        total = await repository.count(session, organization_id, form.id, since)
    return rows, total


def to_dict(submission: Submission) -> dict[str, Any]:
    return {
        "id": submission.id,
        "formId": submission.form_id,
        "formVersion": submission.form_version,
        "submittedAt": isoformat_z(submission.submitted_at),
        "answers": submission.answers,
    }
