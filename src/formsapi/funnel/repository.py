"""The SQL of funnel counts (models.FunnelCount): adding to them, by an
upsert that adds, and adding them up for a range; and of the stamps whose
start was counted (models.StartedStamp)."""

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Insert, and_, bindparam, delete, exists, false, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.funnel.steps import HOUR, periods
from formsapi.kit.time import EPOCH
from formsapi.models import Form, FunnelCount, StartedStamp
from formsapi.tenancy import scoped

# A funnel count's key: what an upsert meets on.
KEY = ("organization_id", "form_id", "period", "start", "form_version", "step")
# (organization, form, hour, form version, step) -> count
Key = tuple[str, str, datetime, int, str]
Increments = Iterable[tuple[Key, int]]
Counts = Counter[Key]


def adding(statement: Any) -> Insert:
    """`statement`, an insert of funnel counts, adding to those already there."""
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(KEY), set_={"count": FunnelCount.count + statement.excluded.count}
    )


@cache
def upsert_statement(postgres: bool) -> Insert:
    insert = postgresql.insert if postgres else sqlite.insert
    return adding(insert(FunnelCount).values({name: bindparam(name) for name in (*KEY, "count")}))


def parameters(increments: Increments) -> list[dict[str, Any]]:
    """Each increment as the rows it adds to: its hour's, its day's, all
    time's; in the key's order, so that transactions adding to the same rows
    take their locks in one order (no deadlock on PostgreSQL)."""
    rows = [
        {
            "organization_id": organization_id,
            "form_id": form_id,
            "period": period,
            "start": start,
            "form_version": version,
            "step": step,
            "count": count,
        }
        for (organization_id, form_id, hour, version, step), count in increments
        if count
        for period, start in periods(hour)
    ]
    return sorted(rows, key=lambda row: tuple(row[name] for name in KEY))


@cache
def _upsert_of_forms_kept(postgres: bool) -> Insert:
    """The upsert, adding nothing for a form since deleted (views held in a
    process outlive the form they count)."""
    insert = postgresql.insert if postgres else sqlite.insert
    table = FunnelCount.__table__.c
    columns = [bindparam(name, type_=table[name].type) for name in (*KEY, "count")]
    kept = exists().where(
        scoped(Form, bindparam("organization_id")), Form.id == bindparam("form_id")
    )
    rows = select(*columns).where(kept)
    return adding(insert(FunnelCount).from_select([*KEY, "count"], rows))


async def add(session: AsyncSession, increments: Increments, *, held: bool = False) -> None:
    """Add to the funnel counts in the caller's transaction (each row names
    its organization); `held`: counts held a while, whose form may be gone."""
    rows = parameters(increments)
    if not rows:
        return
    postgres = session.get_bind().dialect.name == "postgresql"
    statement = _upsert_of_forms_kept(postgres) if held else upsert_statement(postgres)
    await (await session.connection()).execute(statement, rows)


# A period and the starts it covers, [low, high).
Span = tuple[str, datetime, datetime]


def spans(hours: tuple[datetime, datetime] | None) -> list[Span]:
    """The kept counts that cover the whole hours [low, high): all time
    without a range; else whole UTC days, and whole hours at either end."""
    if hours is None:
        return [("t", EPOCH, EPOCH + HOUR)]
    low, high = hours
    first_day = low if low.hour == 0 else (low.replace(hour=0) + 24 * HOUR)
    last_day = high.replace(hour=0)
    if first_day >= last_day:
        return [("h", low, high)] if low < high else []
    found = [("h", low, first_day), ("d", first_day, last_day), ("h", last_day, high)]
    return [span for span in found if span[1] < span[2]]


async def totals(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    covered: list[Span],
    version: int | None,
) -> dict[str, int]:
    """Each step's count over `covered`, of one version or all."""
    conditions = [
        scoped(FunnelCount, organization_id),
        FunnelCount.form_id == form_id,
        or_(
            false(),
            *(
                and_(FunnelCount.period == period, FunnelCount.start >= a, FunnelCount.start < b)
                for period, a, b in covered
            ),
        ),
    ]
    if version is not None:
        conditions.append(FunnelCount.form_version == version)
    statement = (
        select(FunnelCount.step, func.sum(FunnelCount.count))
        .where(*conditions)
        .group_by(FunnelCount.step)
    )
    return {step: int(count) for step, count in await session.execute(statement)}


async def claim_starts(session: AsyncSession, claims: dict[str, datetime]) -> set[str]:
    """Record stamps as started (each with the moment it can start no one any
    more), in the caller's transaction: those not recorded before, by this
    process or another. One statement, however many."""
    if not claims:
        return set()
    postgres = session.get_bind().dialect.name == "postgresql"
    insert = postgresql.insert if postgres else sqlite.insert
    statement = (
        insert(StartedStamp)
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(StartedStamp.id)
    )
    rows = [{"id": claim, "expires_at": until} for claim, until in sorted(claims.items())]
    return set((await (await session.connection()).execute(statement, rows)).scalars())


async def purge_started(session: AsyncSession, before: datetime, batch: int) -> int:
    """Forget up to `batch` stamps that could start no one after `before`
    (the sweeps, kit/sweeps.py)."""
    expired = select(StartedStamp.id).where(StartedStamp.expires_at < before).limit(batch)
    statement = delete(StartedStamp).where(StartedStamp.id.in_(expired.scalar_subquery()))
    connection = await session.connection()
    return int((await connection.execute(statement)).rowcount)
