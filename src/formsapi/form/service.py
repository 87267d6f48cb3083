"""Reading forms. Every lookup is scoped to the caller's organization, so a form
of another organization is indistinguishable from one that does not exist."""

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import FormNotFound
from formsapi.form import repository
from formsapi.form.blocks import BlockList, answers_schema
from formsapi.kit.ids import is_plausible
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z
from formsapi.models import Form


async def page_document(session: AsyncSession, organization_id: str, page: PageParams) -> bytes:
    """The JSON body of one page of forms, newest first, with the exact total."""
    rows = await repository.list_page(session, organization_id, page.offset, page.limit)
    total = rows[0].total if rows else await repository.count(session, organization_id)
    return orjson.dumps(
        {
            "data": [summary(row) for row in rows],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


async def get(session: AsyncSession, organization_id: str, form_id: str) -> Form:
    form = (
        await repository.get(session, organization_id, form_id) if is_plausible(form_id) else None
    )
    if form is None:
        raise FormNotFound(form_id)
    return form


def summary(form: Form | repository.SummaryRow) -> dict[str, Any]:
    return {
        "id": form.id,
        "title": form.title,
        "slug": form.slug,
        "status": form.status,
        "responseCount": form.response_count,
        "createdAt": isoformat_z(form.created_at),
    }


# Derived schemas by (form, version, updatedAt): any change to a form moves
# updatedAt, so an entry is never stale; bounded, as forms come and go.
_SCHEMAS: dict[tuple[str, int, datetime], dict[str, Any]] = {}
_SCHEMAS_MAX = 2048


def _schema_of(form: Form) -> dict[str, Any]:
    key = (form.id, form.version, form.updated_at)
    schema = _SCHEMAS.get(key)
    if schema is None:
        if len(_SCHEMAS) >= _SCHEMAS_MAX:
            _SCHEMAS.clear()
        blocks = BlockList.validate_python(form.blocks)
        schema = _SCHEMAS[key] = answers_schema(blocks, title=form.title)
    return schema


def detail(form: Form) -> dict[str, Any]:
    return {
        **summary(form),
        "updatedAt": isoformat_z(form.updated_at),
        "version": form.version,
        # Stored blocks are already in their API shape; they pass through untouched.
        "blocks": form.blocks,
        "schema": _schema_of(form),
    }
