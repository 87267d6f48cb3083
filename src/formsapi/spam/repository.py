"""The counts of posts refused as spam, and the challenges already spent."""

from datetime import date, datetime
from functools import cache

from sqlalchemy import Insert, bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import SpamRefusal, UsedChallenge
from formsapi.tenancy import scoped

_KEY = ("organization_id", "form_id", "day", "reason")


@cache
def _adding(postgres: bool) -> Insert:
    insert = postgresql.insert if postgres else sqlite.insert
    statement = insert(SpamRefusal).values({name: bindparam(name) for name in (*_KEY, "count")})
    return statement.on_conflict_do_update(
        index_elements=list(_KEY), set_={"count": SpamRefusal.count + statement.excluded.count}
    )


async def add(
    session: AsyncSession, organization_id: str, form_id: str, day: date, reason: str
) -> None:
    """One more refusal of `reason` on `day`: one statement, however many
    processes count at once (an upsert adds to the row another made)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    await session.execute(
        _adding(postgres),
        {
            "organization_id": organization_id,
            "form_id": form_id,
            "day": day,
            "reason": reason,
            "count": 1,
        },
    )


async def counts(
    session: AsyncSession, organization_id: str, form_id: str, since: date
) -> list[tuple[date, str, int]]:
    """(day, reason, count) from `since` on, newest day first."""
    statement = (
        select(SpamRefusal.day, SpamRefusal.reason, SpamRefusal.count)
        .where(
            scoped(SpamRefusal, organization_id),
            SpamRefusal.form_id == form_id,
            SpamRefusal.day >= since,
        )
        .order_by(SpamRefusal.day.desc(), SpamRefusal.reason)
    )
    return [(day, reason, count) for day, reason, count in await session.execute(statement)]


async def spend(session: AsyncSession, challenge_id: str, expires_at: datetime) -> bool:
    """Record a challenge as spent: False when it was already."""
    try:
        async with session.begin_nested():
            session.add(UsedChallenge(id=challenge_id, expires_at=expires_at))
    except IntegrityError:
        return False
    return True


async def purge_spent(session: AsyncSession, before: datetime, batch: int) -> int:
    """Forget up to `batch` challenges expired before `before`: they can be
    posted no more (the sweeps, kit/sweeps.py)."""
    expired = select(UsedChallenge.id).where(UsedChallenge.expires_at < before).limit(batch)
    statement = delete(UsedChallenge).where(UsedChallenge.id.in_(expired.scalar_subquery()))
    connection = await session.connection()
    return int((await connection.execute(statement)).rowcount)
