from collections.abc import Sequence
from datetime import datetime
from functools import cache

from sqlalchemy import ColumnElement, Row, Select, Text, bindparam, cast, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Form, Submission

# From this offset on, the rows to skip are walked in the index alone (it holds
# submitted_at and id) and only the page's rows are fetched whole.
DEFERRED_JOIN_FROM = 500

PageRow = Row[str, str, int, datetime, str, int]


def _of_form(since: bool) -> list[ColumnElement[bool]]:
    conditions = [
        Submission.organization_id == bindparam("organization_id"),
        Submission.form_id == bindparam("form_id"),
    ]
    if since:
        conditions.append(Submission.submitted_at > bindparam("since"))
    return conditions


@cache
def _page_statement(since: bool, deferred: bool) -> Select[str, str, int, datetime, str, int]:
    """One of four statement shapes, built once: constructing SQLAlchemy
    statements per request cost as much as running them."""
    conditions = _of_form(since)
    newest_first = (Submission.submitted_at.desc(), Submission.id.desc())
    if since:
        total: ColumnElement[int] = (
            select(func.count()).select_from(Submission).where(*conditions).scalar_subquery()
        )
    else:
        # Kept exact with every write: the total never counts the form's rows.
        total = (
            select(Form.response_count)
            .where(
                Form.organization_id == bindparam("organization_id"),
                Form.id == bindparam("form_id"),
            )
            .scalar_subquery()
        )
    columns = (
        Submission.id,
        Submission.form_id,
        Submission.form_version,
        Submission.submitted_at,
        # The answers as the JSON text the database holds: the API embeds it as
        # is, so they are never decoded and re-encoded.
        cast(Submission.answers, Text).label("answers_json"),
        total.label("total"),
    )
    if not deferred:
        return (
            select(*columns)
            .where(*conditions)
            .order_by(*newest_first)
            .offset(bindparam("offset"))
            .limit(bindparam("limit"))
        )
    ids = (
        select(Submission.id)
        .where(*conditions)
        .order_by(*newest_first)
        .offset(bindparam("offset"))
        .limit(bindparam("limit"))
        .subquery("ids")
    )
    return (
        select(*columns)
        .join(ids, ids.c.id == Submission.id)
        .where(Submission.organization_id == bindparam("organization_id"))
        .order_by(*newest_first)
    )


async def list_page(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    since: datetime | None,
    offset: int,
    limit: int,
) -> Sequence[PageRow]:
    """One page, each row carrying the total (computed once by the database)."""
    statement = _page_statement(since is not None, offset >= DEFERRED_JOIN_FROM)
    parameters = {
        "organization_id": organization_id,
        "form_id": form_id,
        "limit": limit,
        "offset": offset,
    }
    if since is not None:
        parameters["since"] = since
    # Core execution on the session's connection: no ORM machinery for plain rows.
    connection = await session.connection()
    return (await connection.execute(statement, parameters)).all()


async def count(
    session: AsyncSession, organization_id: str, form_id: str, since: datetime | None
) -> int:
    statement = select(func.count()).select_from(Submission).where(*_of_form(since is not None))
    parameters = {"organization_id": organization_id, "form_id": form_id, "since": since}
    connection = await session.connection()
    return int(await connection.scalar(statement, parameters) or 0)
