"""A form's submissions streamed in constant memory, as CSV or NDJSON, and
its daily counts.

An export reads the live submissions in change-number order, up to the
form's number when it started, a chunk at a time past the last number read,
each chunk in its own short read: a million rows never sit in memory, nor
hold one transaction or connection while a slow client downloads. What
changes meanwhile is in the change feed after that starting number.
"""

import asyncio
import csv
import io
import re
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from datetime import UTC, date, datetime, time, timedelta

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import ReadSession
from formsapi.form import repository as form_repository
from formsapi.kit.time import utcnow
from formsapi.language import compiled
from formsapi.language.definition import answer_keys
from formsapi.submission import repository
from formsapi.submission.repository import ChangeRow
from formsapi.submission.schemas import change_wire

CHUNK = 1000
FIXED_COLUMNS = ["submission_id", "submitted_at", "form_version"]
# A cell starting with one of these is a formula to a spreadsheet: a respondent
# could make a colleague's Excel run one. Prefixed with ' (OWASP's advice).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


async def columns(session: AsyncSession, organization_id: str, form_id: str) -> list[str]:
    """Answer keys (questions, hidden fields, variables): the current
    version's in order, then keys only older versions had."""
    keys: list[str] = []
    for version in await form_repository.all_versions(session, organization_id, form_id):
        then = compiled.compile_version(
            organization_id, form_id, version.version, version.blocks, version.definition
        )
        for key in answer_keys(then.blocks, then.definition):
            if key not in keys:
                keys.append(key)
    return keys


def _cell(value: object) -> object:
    """A text answer a spreadsheet would run as a formula, neutralized: one
    starting with a formula character, also after the spaces and invisible
    characters a spreadsheet trims (non-breaking and zero-width spaces, a byte
    order mark), and in the full-width forms it reads alike (U+FF1D and kin)."""
    if not isinstance(value, str):
        return value
    skipped = _SKIPPED.match(value)
    first = value[skipped.end() if skipped else 0 :][:1]
    formula = first and unicodedata.normalize("NFKC", first) in "=+-@"
    if value.startswith(_FORMULA_START) or formula:
        return "'" + value
    return value


# What a spreadsheet skips before a formula: whitespace of every kind (\s is
# Unicode's) and the invisible format characters (soft hyphen, zero-width
# spaces and joiners, direction marks, word joiner, byte order mark).
_SKIPPED = re.compile(r"[\s\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]*")


async def _chunks(
    sessionmaker: async_sessionmaker[ReadSession], organization_id: str, form_id: str, upto: int
) -> AsyncIterator[Sequence[ChangeRow]]:
    """The chunks in order, the next one read while this one is encoded and
    sent (the database and the encoding run side by side), never more than
    two in memory."""

    async def read(after: int) -> tuple[Sequence[ChangeRow], bool]:
        async with sessionmaker() as session:
            return await repository.live_between(
                session, organization_id, form_id, after, upto, CHUNK
            )

    reading = asyncio.create_task(read(0))
    try:
        while True:
            rows, more = await reading
            if more:
                reading = asyncio.create_task(read(rows[-1][repository.ROW_CHANGE_SEQ]))
            if rows:
                yield rows
            if not more:
                return
    finally:
        reading.cancel()  # the client went away: the read ahead is not wanted
        with suppress(asyncio.CancelledError):
            await reading


async def ndjson_chunks(
    sessionmaker: async_sessionmaker[ReadSession], organization_id: str, form_id: str, upto: int
) -> AsyncIterator[bytes]:
    """One submission a line, as the change feed shows it, then a last line
    `{"end": true, "changeSeq": upto, "count": n}`: without it, the download
    was cut short, or the form was deleted meanwhile."""
    count = 0
    for_line = orjson.OPT_APPEND_NEWLINE
    async for rows in _chunks(sessionmaker, organization_id, form_id, upto):
        count += len(rows)
        yield b"".join(orjson.dumps(change_wire(form_id, row), option=for_line) for row in rows)
    async with sessionmaker() as session:
        if await repository.positions(session, organization_id, form_id) is None:
            return  # deleted while it streamed: what was sent is not the form
    yield orjson.dumps({"end": True, "changeSeq": upto, "count": count}, option=for_line)


async def csv_chunks(
    sessionmaker: async_sessionmaker[ReadSession],
    organization_id: str,
    form_id: str,
    upto: int,
    keys: list[str],
) -> AsyncIterator[bytes]:
    """A header of FIXED_COLUMNS and the question keys, then a row per
    submission, text a spreadsheet would run as a formula neutralized."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    # The byte order mark tells spreadsheets the file is UTF-8 (names with accents).
    buffer.write("\ufeff")
    writer.writerow(FIXED_COLUMNS + keys)
    yield buffer.getvalue().encode()
    async for rows in _chunks(sessionmaker, organization_id, form_id, upto):
        buffer.seek(0)
        buffer.truncate()
        for id_, form_version, submitted, _, _, _, answers_json, *_ in rows:
            answers = orjson.loads(answers_json)
            writer.writerow(
                [id_, submitted, form_version] + [_cell(answers.get(key, "")) for key in keys]
            )
        yield buffer.getvalue().encode()


async def daily_counts(
    session: AsyncSession, organization_id: str, form_id: str, days: int = 90
) -> list[tuple[date, int]]:
    """Submissions per UTC day over the last `days` days, today included, from
    the hourly counts: at most 24 rows a day read, whatever the form's volume."""
    today = utcnow().date()
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time(), tzinfo=UTC)
    per_day: Counter[date] = Counter()
    for hour, count in await repository.hourly_counts(session, organization_id, form_id, start):
        per_day[hour.date()] += count
    return [(first + timedelta(days=n), per_day[first + timedelta(days=n)]) for n in range(days)]


def filename(slug: str) -> str:
    return f"{slug}-submissions-{utcnow().date().isoformat()}.csv"
