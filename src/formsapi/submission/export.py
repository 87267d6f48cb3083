"""A form's submissions as CSV, streamed in constant memory, and its daily counts.

The export reads in chunks by seeking past the last (time, id) read, each
chunk in its own short read: a million rows never sit in memory or hold one
transaction open while a slow client downloads.
"""

import csv
import io
import re
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.form import repository as form_repository
from formsapi.form.blocks import BlockList, questions
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.submission import repository

CHUNK = 1000
FIXED_COLUMNS = ["submission_id", "submitted_at", "form_version"]
# A cell starting with one of these is a formula to a spreadsheet: a respondent
# could make a colleague's Excel run one. Prefixed with ' (OWASP's advice).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


async def columns(session: AsyncSession, organization_id: str, form_id: str) -> list[str]:
    """Question keys: the current version's in order, then keys only older versions asked."""
    keys: list[str] = []
    for version in await form_repository.all_versions(session, organization_id, form_id):
        for question in questions(BlockList.validate_python(version.blocks)):
            if question.key not in keys:
                keys.append(question.key)
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


async def csv_chunks(
    sessionmaker: async_sessionmaker[AsyncSession],
    organization_id: str,
    form_id: str,
    keys: list[str],
) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    # The byte order mark tells spreadsheets the file is UTF-8 (names with accents).
    buffer.write("\ufeff")
    writer.writerow(FIXED_COLUMNS + keys)
    after: tuple[datetime, str] | None = None
    while True:
        async with sessionmaker() as session:
            rows = await repository.export_chunk(session, organization_id, form_id, after, CHUNK)
        for row in rows:
            answers = row.answers
            writer.writerow(
                [row.id, isoformat_z(row.submitted_at), row.form_version]
                + [_cell(answers.get(key, "")) for key in keys]
            )
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
        if len(rows) < CHUNK:
            return
        after = (rows[-1].submitted_at, rows[-1].id)


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
