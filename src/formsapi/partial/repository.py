"""The SQL of partial responses."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, case, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import PartialResponse
from formsapi.tenancy import scoped, unscoped

PartialRow = Row[
    str, dict[str, Any] | None, int, int, datetime, datetime, datetime, datetime | None
]
_COLUMNS = (
    PartialResponse.id,
    PartialResponse.answers,
    PartialResponse.page,
    PartialResponse.reached,
    PartialResponse.started_at,
    PartialResponse.updated_at,
    PartialResponse.expires_at,
    PartialResponse.completed_at,
)


async def find(
    session: AsyncSession, organization_id: str, form_id: str, token_hash: bytes
) -> PartialRow | None:
    statement = select(*_COLUMNS).where(
        scoped(PartialResponse, organization_id),
        PartialResponse.form_id == form_id,
        PartialResponse.token_hash == token_hash,
    )
    found: PartialRow | None = (await session.execute(statement)).first()
    return found


async def add(session: AsyncSession, partial: PartialResponse) -> None:
    session.add(partial)
    await session.flush()


async def save(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    token_hash: bytes,
    answers: dict[str, Any],
    page: int,
    now: datetime,
    expires_at: datetime,
) -> int | None:
    """Keep newer answers of a partial still open: the furthest page it had
    reached before (its row held until commit), or None when there is none."""
    open_row = (
        scoped(PartialResponse, organization_id),
        PartialResponse.form_id == form_id,
        PartialResponse.token_hash == token_hash,
        PartialResponse.completed_at.is_(None),
        PartialResponse.expires_at > now,
    )
    before: int | None = await session.scalar(
        select(PartialResponse.reached).where(*open_row).with_for_update()
    )
    if before is None:
        return None
    statement = (
        update(PartialResponse)
        .where(*open_row)
        .values(
            answers=answers,
            page=page,
            reached=case((PartialResponse.reached < page, page), else_=PartialResponse.reached),
            updated_at=now,
            expires_at=expires_at,
        )
        .execution_options(synchronize_session=False)
    )
    connection = await session.connection()
    await connection.execute(statement)
    return before


async def complete(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    hashes: Sequence[bytes],
    now: datetime,
) -> dict[bytes, int]:
    """Mark open partials completed and erase their answers, in the
    transaction that stores their submissions; the hashes of those that
    were open, with the furthest page each reached. The rows stay until
    purged, so a used link says so."""
    statement = (
        update(PartialResponse)
        .where(
            scoped(PartialResponse, organization_id),
            PartialResponse.form_id == form_id,
            PartialResponse.token_hash.in_(hashes),
            PartialResponse.completed_at.is_(None),
        )
        .values(completed_at=now, answers=None, updated_at=now)
        .returning(PartialResponse.token_hash, PartialResponse.reached)
        .execution_options(synchronize_session=False)
    )
    connection = await session.connection()
    return {row.token_hash: row.reached for row in await connection.execute(statement)}


async def completed_among(
    session: AsyncSession, organization_id: str, form_id: str, hashes: Sequence[bytes]
) -> set[bytes]:
    statement = select(PartialResponse.token_hash).where(
        scoped(PartialResponse, organization_id),
        PartialResponse.form_id == form_id,
        PartialResponse.token_hash.in_(hashes),
        PartialResponse.completed_at.is_not(None),
    )
    return set((await session.execute(statement)).scalars())


def _open(organization_id: str, form_id: str, now: datetime) -> Any:
    return (
        scoped(PartialResponse, organization_id),
        PartialResponse.form_id == form_id,
        PartialResponse.completed_at.is_(None),
        PartialResponse.expires_at > now,
    )


async def list_open(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    now: datetime,
    limit: int,
    offset: int,
) -> tuple[Sequence[PartialRow], int]:
    """A page of the form's open partials, most recently updated first, and their total."""
    where = _open(organization_id, form_id, now)
    rows: Sequence[PartialRow] = (
        await session.execute(
            select(*_COLUMNS)
            .where(*where)
            .order_by(PartialResponse.updated_at.desc(), PartialResponse.id.desc())
            .limit(limit)
            .offset(offset)
        )
    ).all()
    total = await session.scalar(select(func.count()).select_from(PartialResponse).where(*where))
    return rows, int(total or 0)


async def erase(
    session: AsyncSession, organization_id: str, form_id: str, partial_id: str
) -> dict[str, Any] | None:
    """Delete an open partial; the answers it held (None: there was none)."""
    statement = (
        delete(PartialResponse)
        .where(
            scoped(PartialResponse, organization_id),
            PartialResponse.form_id == form_id,
            PartialResponse.id == partial_id,
            PartialResponse.completed_at.is_(None),
        )
        .returning(PartialResponse.answers)
    )
    connection = await session.connection()
    found = (await connection.execute(statement)).first()
    return None if found is None else dict(found.answers or {})


async def purge(session: AsyncSession, before: datetime, batch: int) -> int:
    """Delete up to `batch` partials that expired before `before`, with
    their answers, across organizations (the retention sweep)."""
    expired = unscoped(
        select(PartialResponse.id).where(PartialResponse.expires_at < before).limit(batch),
        "the retention sweep purges every organization's expired partials",
    )
    statement = unscoped(
        delete(PartialResponse).where(PartialResponse.id.in_(expired.scalar_subquery())),
        "the retention sweep purges every organization's expired partials",
    )
    connection = await session.connection()
    return int((await connection.execute(statement)).rowcount)
