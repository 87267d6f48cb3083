"""Reading forms. Every lookup is scoped to the caller's organization, so a form
of another organization is indistinguishable from one that does not exist."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import FormNotFound
from formsapi.form import repository
from formsapi.form.blocks import BlockList, answers_schema
from formsapi.kit.ids import is_plausible
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z
from formsapi.models import Form


async def list_page(
    session: AsyncSession, organization_id: str, page: PageParams
) -> tuple[Sequence[Form], int]:
    forms = await repository.list_page(session, organization_id, page.offset, page.limit)
    # The count is skipped when the page itself shows it cannot be larger.
    if page.offset == 0 and len(forms) < page.limit:
        return forms, len(forms)
    return forms, await repository.count(session, organization_id)


async def get(session: AsyncSession, organization_id: str, form_id: str) -> Form:
    form = (
        await repository.get(session, organization_id, form_id) if is_plausible(form_id) else None
    )
    if form is None:
        raise FormNotFound(form_id)
    return form


def summary(form: Form) -> dict[str, Any]:
    return {
        "id": form.id,
        "title": form.title,
        "slug": form.slug,
        "status": form.status,
        "responseCount": form.response_count,
        "createdAt": isoformat_z(form.created_at),
    }


def detail(form: Form) -> dict[str, Any]:
    blocks = BlockList.validate_python(form.blocks)
    return {
        **summary(form),
        "updatedAt": isoformat_z(form.updated_at),
        "version": form.version,
        # Stored blocks are already in their API shape; they pass through untouched.
        "blocks": form.blocks,
        "schema": answers_schema(blocks, title=form.title),
    }
