"""The counts of posts refused as spam, and the challenges already spent."""

from collections.abc import Iterable
from datetime import date, datetime
from functools import cache

from sqlalchemy import Insert, bindparam, delete, exists, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Form, SpamRefusal, UsedChallenge
from formsapi.tenancy import scoped

# A count's key: what an upsert meets on. (organization, form, day, reason)
_KEY = ("organization_id", "form_id", "day", "reason")
Key = tuple[str, str, date, str]


@cache
def _adding(postgres: bool) -> Insert:
    """Counts added to those already there, for forms still kept: counts held
    a while (spam/buffer.py) outlive a form deleted meanwhile."""
    insert = postgresql.insert if postgres else sqlite.insert
    table = SpamRefusal.__table__.c
    columns = [bindparam(name, type_=table[name].type) for name in (*_KEY, "count")]
    kept = exists().where(
        scoped(Form, bindparam("organization_id")), Form.id == bindparam("form_id")
    )
    statement = insert(SpamRefusal).from_select([*_KEY, "count"], select(*columns).where(kept))
    return statement.on_conflict_do_update(
        index_elements=list(_KEY), set_={"count": SpamRefusal.count + statement.excluded.count}
    )


async def add(session: AsyncSession, counts: Iterable[tuple[Key, int]]) -> None:
    """Add refusals, by key, in the caller's transaction: one statement,
    however many processes count at once (an upsert adds to the row another
    made). In the key's order, so that transactions adding to the same rows
    take their locks in one order (no deadlock on PostgreSQL)."""
    rows = [
        {"organization_id": o, "form_id": f, "day": d, "reason": r, "count": n}
        for (o, f, d, r), n in sorted(counts)
        if n
    ]
    if not rows:
        return
    postgres = session.get_bind().dialect.name == "postgresql"
    await (await session.connection()).execute(_adding(postgres), rows)


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
