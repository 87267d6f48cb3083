from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Table, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import IdempotencyKey
from formsapi.tenancy import scoped


async def get_live(
    session: AsyncSession, organization_id: str, key: str, since: datetime
) -> IdempotencyKey | None:
    return await session.scalar(
        select(IdempotencyKey).where(
            scoped(IdempotencyKey, organization_id),
            IdempotencyKey.key == key,
            IdempotencyKey.created_at >= since,
        )
    )


async def claim(
    session: AsyncSession,
    organization_id: str,
    key: str,
    fingerprint: str,
    now: datetime,
    expired_before: datetime,
) -> bool:
    """Take the key for a request about to run: insert it, or take over a row
    that expired before `expired_before`, in one statement. False when a live
    row holds it; a concurrent claim's transaction is waited for first."""
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    values = {
        "fingerprint": fingerprint,
        "status": 0,
        "body": "",
        "location": None,
        "created_at": now,
    }
    row = insert(IdempotencyKey).values(organization_id=organization_id, key=key, **values)
    statement = row.on_conflict_do_update(
        index_elements=[IdempotencyKey.organization_id, IdempotencyKey.key],
        set_=values,
        where=IdempotencyKey.created_at < expired_before,
    ).returning(IdempotencyKey.key)
    return (await session.execute(statement)).first() is not None


# The table, not the class: Core rows come back, not ORM objects.
_TABLE: Table = IdempotencyKey.__table__  # type: ignore[assignment]


async def claim_done(
    session: AsyncSession,
    organization_id: str,
    outcomes: Sequence[tuple[str, str, int, str, str | None]],
    now: datetime,
    expired_before: datetime,
) -> set[str]:
    """Claim keys with their outcomes already known (key, fingerprint,
    status, body, location), as `claim` does, in one statement; the keys
    taken (a key a live row holds is not)."""
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    row = insert(_TABLE)
    statement = row.on_conflict_do_update(
        index_elements=[IdempotencyKey.organization_id, IdempotencyKey.key],
        set_={
            name: getattr(row.excluded, name)
            for name in ("fingerprint", "status", "body", "location", "created_at")
        },
        where=IdempotencyKey.created_at < expired_before,
    ).returning(IdempotencyKey.key)
    rows = [
        {
            "organization_id": organization_id,
            "key": key,
            "fingerprint": fingerprint,
            "status": status,
            "body": body,
            "location": location,
            "created_at": now,
        }
        for key, fingerprint, status, body, location in outcomes
    ]
    connection = await session.connection()
    return set((await connection.execute(statement, rows)).scalars())


async def record(
    session: AsyncSession,
    organization_id: str,
    key: str,
    status: int,
    body: str,
    location: str | None,
) -> None:
    await session.execute(
        update(IdempotencyKey)
        .where(scoped(IdempotencyKey, organization_id), IdempotencyKey.key == key)
        .values(status=status, body=body, location=location)
    )


async def delete_expired(session: AsyncSession, organization_id: str, before: datetime) -> None:
    await session.execute(
        delete(IdempotencyKey).where(
            scoped(IdempotencyKey, organization_id),
            IdempotencyKey.created_at < before,
        )
    )


async def responses_at(
    session: AsyncSession, organization_id: str, locations: Sequence[str]
) -> Sequence[tuple[str, str]]:
    """(key, body) of the stored responses that created these resources."""
    statement = select(IdempotencyKey.key, IdempotencyKey.body).where(
        scoped(IdempotencyKey, organization_id), IdempotencyKey.location.in_(locations)
    )
    return [(key, body) for key, body in await session.execute(statement)]


async def replace_body(session: AsyncSession, organization_id: str, key: str, body: str) -> None:
    await session.execute(
        update(IdempotencyKey)
        .where(scoped(IdempotencyKey, organization_id), IdempotencyKey.key == key)
        .values(body=body)
    )
