"""A form's funnel: the steps its hosted page's respondents took, added up
from the kept counts (models.FunnelCount) for a range of whole hours, and
the figures worked out from them (funnel.steps says what is counted)."""

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import ReadSession, purge_in_batches
from formsapi.errors import BadRequest, NotFound
from formsapi.form import service as form_service
from formsapi.funnel import repository, steps
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import compiled
from formsapi.language.compiled import Compiled

# Ranges are cut to these: nothing is counted before or after.
OLDEST = datetime(1970, 1, 1, tzinfo=UTC)
NEWEST = datetime(9999, 12, 30, tzinfo=UTC)


async def funnel(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """The funnel of the respondents whose first page was served in
    [since, until), rounded out to whole UTC hours, of one version or all;
    its pages are those of `version`, else of the form's current version."""
    form = await form_service.get(session, organization_id, form_id)
    if version is None or version == form.version:
        shown = compiled.compile_version(
            form.organization_id, form.id, form.version, form.blocks, form.definition
        )
    else:
        found = await form_service.compiled_version(session, organization_id, form.id, version)
        if found is None:
            raise NotFound(f"Form '{form.id}' has no version {version}; it is at {form.version}.")
        shown = found
    if since is not None and until is not None and until <= since:
        raise BadRequest("`until` must be later than `since`: the range holds no moment.")
    hours = None
    if since is not None or until is not None:
        low = steps.hour_of(min(max(since or OLDEST, OLDEST), NEWEST))
        high = max(min(until or NEWEST, NEWEST), OLDEST)
        if steps.hour_of(high) != high:
            high = steps.hour_of(high) + steps.HOUR
        hours = (low, high)
    counts = await repository.totals(
        session, organization_id, form.id, repository.spans(hours), version
    )
    return {
        "formId": form.id,
        "version": shown.version,
        "filters": {
            "since": isoformat_z(since) if since else None,
            "until": isoformat_z(until) if until else None,
            "version": version,
        },
        "hours": None
        if hours is None
        else {"since": isoformat_z(hours[0]), "until": isoformat_z(hours[1])},
        **figures(counts, _pages(shown)),
    }


def _pages(form: Compiled) -> int:
    return len(form.layout.starts)


def figures(counts: dict[str, int], pages: int) -> dict[str, Any]:
    """The funnel's figures from its steps' counts, for a form of `pages` pages."""
    reached: dict[int, int] = {}
    left: dict[int, int] = {}
    times: list[tuple[int, int]] = []
    for step, count in counts.items():
        kind, number = steps.parse(step)
        if number is None:
            continue
        if kind == "reach":
            reached[number] = count
        elif kind == "left":
            left[number] = count
        elif kind == "time":
            times.append((number, count))
    starts = counts.get(steps.START, 0)
    completions = counts.get(steps.DONE, 0)
    reached[1] = starts  # a start is reaching the first page
    shown = []
    for page in range(1, pages + 1):
        came = reached.get(page, 0)
        # Never below 0: a start lost with a killed process (buffer.py) may
        # leave a page more departures than arrivals.
        stopped = max(0, came - left.get(page, 0))
        shown.append(
            {
                "page": page,
                "reached": came,
                "stopped": stopped,
                "dropOffRate": _rate(stopped, came),
            }
        )
    return {
        "views": counts.get(steps.VIEW, 0),
        "starts": starts,
        "completions": completions,
        "completionRate": _rate(completions, starts),
        "timedCompletions": sum(count for _, count in times),
        "medianSecondsToComplete": median(times),
        "pages": shown,
    }


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def median(counted: list[tuple[int, int]]) -> float | None:
    """The median of values given with their counts (the mean of the two
    middle ones for an even count), as statistics.median of the values."""
    total = sum(count for _, count in counted)
    if not total:
        return None
    middle = [(total - 1) // 2, total // 2]  # the middle values' positions
    found: list[int] = []
    seen = 0
    for value, count in sorted(counted):
        while len(found) < 2 and middle[len(found)] < seen + count:
            found.append(value)
        seen += count
        if len(found) == 2:
            break
    return (found[0] + found[1]) / 2


# What the hosted page and the intake add, in their own transactions.


async def went_to(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    version: int,
    at: datetime,
    before: int,
    page: int,
) -> None:
    """A respondent's furthest page (from 0) rose from `before` to `page`,
    counted in the hour of `at` (their stamp's, else now); nothing when it
    did not rise."""
    if page <= before:
        return
    hour = steps.hour_of(at)
    await repository.add(
        session,
        [
            ((organization_id, form_id, hour, version, steps.left(before + 1)), 1),
            ((organization_id, form_id, hour, version, steps.reach(page + 1)), 1),
        ],
    )


def completed(
    organization_id: str,
    form_id: str,
    version: int,
    done: list[tuple[steps.Completion, int | None]],
) -> repository.Counts:
    """What submissions from the hosted page add (each with the furthest page
    its partial reached, if it closed one)."""
    found: repository.Counts = Counter()
    for completion, furthest in done:
        for step in completion.steps(furthest):
            found[organization_id, form_id, completion.hour, version, step] += 1
    return found


async def purge_started(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Forget the stamps whose start was counted once they can start no one
    any more (funnel/buffer.py)."""
    return await purge_in_batches(sessionmaker, repository.purge_started, utcnow())
