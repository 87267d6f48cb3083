"""The answer counts behind summaries (models.AnswerCount), kept exact in the
same transaction as every write to a form's submissions: a new submission
adds its tally, an edit its new tally less its old, a delete takes its
tally away. Each change is added per hour, per UTC day and in all."""

from collections import Counter
from collections.abc import Collection, Mapping
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from sqlalchemy import Insert, and_, bindparam, delete, insert, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import EPOCH
from formsapi.language.compiled import Counted
from formsapi.models import AnswerCount, Submission
from formsapi.submission.repository.counts import day_of, hour_of
from formsapi.tenancy import scoped

# A value whose JSON is longer is counted as answered only (a long text
# variable); the summary's own count over rows applies the same rule.
VALUE_MAX = 200
# The key that counts submissions by the ending they reached.
ENDING = "#ending"
PERIODS = ("h", "d", "t")

Tally = Counter[tuple[str, str]]  # (key, value as JSON or "") -> submissions


def tally(counted: Counted, answers: Mapping[str, Any], ending: str | None) -> Tally:
    """What one submission adds to its form's answer counts."""
    found: Tally = Counter()
    for key, value in answers.items():
        text = ""
        if key in counted.valued:
            encoded = orjson.dumps(value).decode()
            if len(encoded) <= VALUE_MAX:
                text = encoded
        found[key, text] += 1
    for group in {counted.groups[key] for key in answers if key in counted.groups}:
        found[group, ""] += 1
    found[ENDING, orjson.dumps(ending).decode()] += 1
    return found


def starts(moment: datetime) -> dict[str, datetime]:
    return {"h": hour_of(moment), "d": day_of(moment), "t": EPOCH}


# An answer count's key: what an upsert meets on.
KEY = ("organization_id", "form_id", "period", "start", "form_version", "key", "value")


def adding(statement: Any) -> Insert:
    """`statement`, an insert of answer counts, adding to those already there."""
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(KEY), set_={"count": AnswerCount.count + statement.excluded.count}
    )


@cache
def upsert_statement(postgres: bool) -> Insert:
    insert = postgresql.insert if postgres else sqlite.insert
    return adding(insert(AnswerCount).values({name: bindparam(name) for name in (*KEY, "count")}))


async def add_tally(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    form_version: int,
    moment: datetime,
    change: Tally,
) -> None:
    """Add `change` (negative counts take away) to the form's answer counts
    of `form_version` at `moment`, in the caller's transaction."""
    change = Counter({pair: n for pair, n in change.items() if n})
    if not change:
        return
    common = {"organization_id": organization_id, "form_id": form_id, "form_version": form_version}
    parameters = [
        {**common, "period": period, "start": start, "key": key, "value": value, "count": n}
        for period, start in starts(moment).items()
        for (key, value), n in change.items()
    ]
    postgres = session.get_bind().dialect.name == "postgresql"
    await (await session.connection()).execute(upsert_statement(postgres), parameters)


async def drop_emptied(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    form_version: int,
    moment: datetime,
    keys: Collection[str],
) -> None:
    """Delete the form's answer counts of `keys` at `moment` that came down
    to nothing (a deleted submission's): a count of 0 adds nothing to a
    summary, and its value may be a person's own text (a computed variable)."""
    if not keys:
        return
    await session.execute(
        delete(AnswerCount).where(
            scoped(AnswerCount, organization_id),
            AnswerCount.form_id == form_id,
            AnswerCount.form_version == form_version,
            or_(
                *(
                    and_(AnswerCount.period == period, AnswerCount.start == start)
                    for period, start in starts(moment).items()
                )
            ),
            AnswerCount.key.in_(sorted(keys)),
            AnswerCount.count <= 0,
        )
    )


def tally_arrays(change: Tally) -> dict[str, list[Any]]:
    """A batch's tally as the one-statement write's arrays (created.py)."""
    return {
        "tally_keys": [key for key, _ in change],
        "tally_values": [value for _, value in change],
        "tally_counts": list(change.values()),
    }


async def rebuild_tallies(
    session: AsyncSession, organization_id: str, counted: Mapping[tuple[str, int], Counted]
) -> None:
    """Count an organization's answers again from its rows, each form
    version's as `counted` says: for bulk loaders, which write rows
    directly, and the migration that began these counts."""
    await session.execute(delete(AnswerCount).where(scoped(AnswerCount, organization_id)))
    found: dict[tuple[str, int, str, datetime], Tally] = {}
    statement = select(
        Submission.form_id,
        Submission.form_version,
        Submission.submitted_at,
        Submission.answers,
        Submission.ending,
    ).where(scoped(Submission, organization_id))
    rows = await session.stream(statement.execution_options(yield_per=2000))
    async for form_id, version, submitted_at, answers, ending in rows:
        how = counted.get((form_id, version))
        if how is None:
            continue
        one = tally(how, answers, ending)
        for period, start in starts(submitted_at).items():
            found.setdefault((form_id, version, period, start), Counter()).update(one)
    parameters = [
        {
            "organization_id": organization_id,
            "form_id": form_id,
            "form_version": version,
            "period": period,
            "start": start,
            "key": key,
            "value": value,
            "count": n,
        }
        for (form_id, version, period, start), change in found.items()
        for (key, value), n in change.items()
    ]
    connection = await session.connection()
    for first in range(0, len(parameters), 10_000):
        await connection.execute(insert(AnswerCount), parameters[first : first + 10_000])
