"""Reading submissions of one form, most recent first."""

from collections.abc import Sequence
from datetime import datetime

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z
from formsapi.submission import repository
from formsapi.submission.repository import PageRow

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
    the machine less than having the database build the JSON (12,900 against
    4,500 statements a second in pgbench for page 1)."""
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
        total = rows[0].total
    else:
        # An empty page: tell a missing form (404) from one with fewer rows.
        await form_service.get(session, organization_id, form_id)
        total = await repository.total(session, organization_id, form_id, since)
    return orjson.dumps(
        {
            "data": [
                {
                    "id": row.id,
                    "formId": row.form_id,
                    "formVersion": row.form_version,
                    "submittedAt": isoformat_z(row.submitted_at),
                    "answers": orjson.Fragment(row.answers_json),
                }
                for row in rows
            ],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )
