"""The tallies behind a form's answer summary, counted by the database in one
statement over the submissions a filter matches: per answer key, how many
hold it (and, for the keys whose values count, how many hold each value),
how many reached each ending, and how many there are. One statement, so the
figures agree with each other whatever is written meanwhile."""

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    false,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB

from formsapi.db.session import ReadSession
from formsapi.kit.time import EPOCH
from formsapi.language.compiled import Counted
from formsapi.models import AnswerCount, Submission
from formsapi.submission.repository.counts import DAY, HOUR, day_of, hour_of
from formsapi.submission.repository.tallies import ENDING, VALUE_MAX
from formsapi.summary.figures import Tallies
from formsapi.tenancy import scoped

JsonScalar = str | int | float


@dataclass(frozen=True)
class AnswerIs:
    """Submissions whose answer to `key` is `value` (for a multiple choice:
    includes the option `value`)."""

    key: str
    value: JsonScalar
    includes: bool = False


@dataclass(frozen=True)
class Filters:
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive
    version: int | None = None
    hidden: tuple[str, str] | None = None  # a hidden field's key and value
    answer: AnswerIs | None = None

    @property
    def counts_rows(self) -> bool:
        """Whether the tallies are counted from rows: the kept counts cannot
        split by a hidden field or an answer."""
        return self.hidden is not None or self.answer is not None


async def tallies(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    filters: Filters,
    counted: Counted,
) -> Tallies:
    """The tallies of the form's submissions that `filters` match, `counted`
    saying which keys' values count and which keys are counted together.

    Without a hidden-field or answer filter they are added up from the kept
    answer counts (models.AnswerCount): all time, or the whole UTC days, then
    whole hours, of a range; only the minutes at its ends are counted from
    rows. With one, they are counted from the rows that match. Either way in
    one statement: the figures agree with each other."""
    postgres = session.get_bind().dialect.name == "postgresql"
    # Counted from rows on PostgreSQL, the statement holds the form's ids (and
    # keys) written out, so it is planned for this form: the pool plans each
    # statement once for any values (db.create_engine), and for any form it
    # reads the rows through the form's index, however much of the table the
    # form is (bench/RESULTS.md).
    written = postgres and filters.counts_rows
    of_form = [
        scoped(Submission, _bound("organization_id", organization_id, written)),
        Submission.form_id == _bound("form_id", form_id, written),
    ]
    if filters.version is not None:
        of_form.append(Submission.form_version == filters.version)
    if filters.counts_rows:
        parts = _counted_from_rows(
            [*of_form, *_conditions(filters, postgres)], postgres, counted, written=written
        )
    else:
        kept, edges = _spans(filters.since, filters.until)
        parts = [_kept(organization_id, form_id, filters.version, kept)]
        if edges:
            in_edges = or_(
                *(
                    and_(Submission.submitted_at >= low, Submission.submitted_at < high)
                    for low, high in edges
                )
            )
            parts += _counted_from_rows([*of_form, in_edges], postgres, counted)
    found = Tallies()
    # Every part gives (key, value as JSON text or NULL, count), as tallies.tally pairs.
    for name, json_text, count in await session.execute(union_all(*parts)):
        add_pair(found, name, json_text, count)
    return found


def _bound(name: str, value: str | list[str], written: bool) -> Any:
    """`value` bound to the statement, or written into its SQL (escaped, as
    a text literal) when it is executed."""
    return bindparam(name, value, Text(), literal_execute=True) if written else value


# Spans of the kept counts: a period and the starts it covers, [low, high).
Span = tuple[str, datetime, datetime]
# No submission is older or newer; ranges are cut to these.
OLDEST = datetime(1970, 1, 1, tzinfo=UTC)
NEWEST = datetime(9999, 12, 30, tzinfo=UTC)


def _spans(
    since: datetime | None, until: datetime | None
) -> tuple[list[Span], list[tuple[datetime, datetime]]]:
    """[since, until) as the kept counts that cover it (all time; or whole
    UTC days, then whole hours) and the ends they leave, under an hour each,
    to count from rows."""
    if since is None and until is None:
        return [("t", EPOCH, EPOCH + HOUR)], []
    low = min(max(since or OLDEST, OLDEST), NEWEST)
    high = max(min(until or NEWEST, NEWEST), OLDEST)
    hours = (_ceil(low, HOUR), hour_of(high))
    if hours[0] >= hours[1]:
        return [], [(low, high)]
    days = (_ceil(low, DAY), day_of(high))
    spans: list[Span] = []
    if days[0] < days[1]:
        spans.append(("d", *days))
        spans += [("h", hours[0], days[0]), ("h", days[1], hours[1])]
    else:
        spans.append(("h", *hours))
    edges = [(low, hours[0]), (hours[1], high)]
    return (
        [span for span in spans if span[1] < span[2]],
        [(a, b) for a, b in edges if a < b],
    )


def _ceil(moment: datetime, unit: timedelta) -> datetime:
    floor = hour_of(moment) if unit == HOUR else day_of(moment)
    return floor if floor == moment else floor + unit


def _kept(
    organization_id: str, form_id: str, version: int | None, spans: list[Span]
) -> Select[*tuple[Any, ...]]:
    conditions = [
        scoped(AnswerCount, organization_id),
        AnswerCount.form_id == form_id,
        or_(
            false(),
            *(
                and_(
                    AnswerCount.period == period, AnswerCount.start >= low, AnswerCount.start < high
                )
                for period, low, high in spans
            ),
        ),
    ]
    if version is not None:
        conditions.append(AnswerCount.form_version == version)
    return (
        select(AnswerCount.key, AnswerCount.value, func.sum(AnswerCount.count))
        .where(*conditions)
        .group_by(AnswerCount.key, AnswerCount.value)
    )


def _counted_from_rows(
    matching: list[ColumnElement[bool]],
    postgres: bool,
    counted: Counted,
    tag: int | None = None,
    written: bool = False,
) -> list[Select[*tuple[Any, ...]]]:
    """The tallies of the rows `matching` selects, as the kept counts hold
    them (tallies.tally): per key and counted value, the ending's too, and
    per group; each row led by `tag` when given (a time series' bucket).
    `written`: the keys whose values count written into the SQL (_bound)."""
    lead = [] if tag is None else [literal(tag)]
    first = len(lead) + 1  # the key's column
    # The ending joins the answers as one more pair (no answer key starts
    # with "#"): the rows are read once.
    if postgres:
        # A lateral union: a second read of the rows for the ending, or the
        # ending joined to each row's answers (||), cost more (bench/RESULTS.md).
        # Its constants written out: bound, they keep PostgreSQL from
        # counting in parallel workers.
        each = func.jsonb_each(Submission.answers).table_valued("key", "value")
        ending = func.coalesce(func.to_jsonb(Submission.ending), literal_column("'null'::jsonb"))
        pairs = union_all(
            select(each.c.key, each.c.value),
            select(literal_column(f"'{ENDING}'"), ending).correlate(Submission),  # the outer row's
        ).lateral()
        value: ColumnElement[Any] = cast(pairs.c.value, Text)  # JSON text
    else:
        with_ending = func.json_set(Submission.answers, _path(ENDING), Submission.ending)
        pairs = func.json_each(with_ending).table_valued("key", "value", "type")
        # json_each gives SQL values; json_quote makes them JSON text again.
        value = func.json_quote(pairs.c.value)
    key: ColumnElement[str] = pairs.c.key
    valued = _bound("valued", sorted({*counted.valued, ENDING}), written)
    # One pass over the answers: a valued key's rows per value, any other
    # key's in one row (value NULL). A key is answered as often as its rows
    # count, whatever their values.
    # The length rule is tallies.tally's, on orjson's text: a number's is
    # short there whatever the database writes (PostgreSQL prints 1e-250 in full).
    number = (
        func.jsonb_typeof(pairs.c.value) == "number"
        if postgres
        else pairs.c.type.in_(["integer", "real"])
    )
    shown = case(
        (and_(key.in_(valued), or_(number, func.length(value) <= VALUE_MAX)), value),
        else_=null(),
    )
    parts = [
        select(*lead, key, shown, func.count())
        .select_from(Submission)
        .join(pairs, true())
        .where(*matching)
        # By position: the CASE's bound keys would make it another expression.
        .group_by(literal_column(str(first)), literal_column(str(first + 1))),
    ]
    if counted.groups:
        group = case(counted.groups, value=key)
        parts.append(
            select(*lead, group, null(), func.count(Submission.id.distinct()))
            .select_from(Submission)
            .join(pairs, true())
            .where(*matching, key.in_(list(counted.groups)))
            .group_by(literal_column(str(first)))
        )
    return parts


def _conditions(filters: Filters, postgres: bool) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.since is not None:
        conditions.append(Submission.submitted_at >= filters.since)
    if filters.until is not None:
        conditions.append(Submission.submitted_at < filters.until)
    if filters.version is not None:
        conditions.append(Submission.form_version == filters.version)
    # A text matches only a text answer (as held.py matches): a key that was
    # a number question in an earlier version holds numbers too.
    if filters.hidden is not None:
        conditions.append(_is(*filters.hidden, postgres))
    answer = filters.answer
    if answer is not None:
        if answer.includes:
            # Options are joined by commas and hold none themselves.
            listed = literal(",") + _text_of(answer.key, postgres) + literal(",")
            position = func.strpos if postgres else func.instr
            conditions.append(position(listed, f",{answer.value},") > 0)
            conditions.append(_type_of(answer.key, postgres) == ("string" if postgres else "text"))
        elif isinstance(answer.value, str):
            conditions.append(_is(answer.key, answer.value, postgres))
        elif postgres:
            conditions.append(
                Submission.answers.op("->")(answer.key)
                # Bound as text, then read as JSON: 5 matches 5 and 5.0.
                == cast(literal(orjson.dumps(answer.value).decode(), Text), JSONB)
            )
        else:
            conditions.append(
                func.json_extract(Submission.answers, _path(answer.key)) == answer.value
            )
    return conditions


def _is(key: str, text: str, postgres: bool) -> ColumnElement[bool]:
    """The answer to `key` is the text `text`."""
    if postgres:
        # jsonb equality tells a text from a number.
        return Submission.answers.op("->")(key) == cast(
            literal(orjson.dumps(text).decode(), Text), JSONB
        )
    # json_extract gives a text answer as TEXT, a number as INTEGER or REAL,
    # and SQLite's = never takes one for the other here.
    return func.json_extract(Submission.answers, _path(key)) == text


def _type_of(key: str, postgres: bool) -> ColumnElement[str]:
    if postgres:
        return func.jsonb_typeof(Submission.answers.op("->")(key))
    return func.json_type(Submission.answers, _path(key))


def _text_of(key: str, postgres: bool) -> ColumnElement[str]:
    """The answer to `key` as text (a string answer's own text)."""
    if postgres:
        return Submission.answers.op("->>")(key)
    return func.json_extract(Submission.answers, _path(key))


def _path(key: str) -> str:
    # Keys are letters, digits, underscores and dots (a matrix row): quoted,
    # a dot is part of the name.
    return f'$."{key}"'


async def series(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    bounds: Sequence[datetime],
    keys: Sequence[str],
    counted: Counted,
    version: int | None = None,
) -> list[Tallies]:
    """The tallies of `keys` in each bucket between consecutive `bounds`
    (UTC instants): the kept hourly counts of the hours inside a bucket,
    and, where a bucket starts or ends within an hour (a zone whose offset
    is not whole hours), that hour's part counted from rows."""
    found = [Tallies() for _ in bounds[:-1]]
    low, high = hour_of(bounds[0]), _ceil(bounds[-1], HOUR)
    conditions = [
        scoped(AnswerCount, organization_id),
        AnswerCount.form_id == form_id,
        AnswerCount.period == "h",
        AnswerCount.start >= low,
        AnswerCount.start < high,
        AnswerCount.key.in_([*keys, ENDING]),
    ]
    if version is not None:
        conditions.append(AnswerCount.form_version == version)
    kept = await session.execute(
        select(AnswerCount.start, AnswerCount.key, AnswerCount.value, func.sum(AnswerCount.count))
        .where(*conditions)
        .group_by(AnswerCount.start, AnswerCount.key, AnswerCount.value)
    )
    for start, name, json_text, count in kept:
        index = bisect_right(bounds, start) - 1
        if 0 <= index < len(found) and start + HOUR <= bounds[index + 1]:
            add_pair(found[index], name, json_text, count)
    # The parts of hours that a boundary cuts, each in its own bucket.
    windows = []
    for index, bound in enumerate(bounds):
        if hour_of(bound) == bound:
            continue
        if index > 0:
            windows.append((index - 1, max(hour_of(bound), bounds[index - 1]), bound))
        if index < len(found):
            windows.append((index, bound, min(_ceil(bound, HOUR), bounds[index + 1])))
    if windows:
        postgres = session.get_bind().dialect.name == "postgresql"
        of_form = [scoped(Submission, organization_id), Submission.form_id == form_id]
        if version is not None:
            of_form.append(Submission.form_version == version)
        parts = [
            part
            for index, since, until in windows
            for part in _counted_from_rows(
                [*of_form, Submission.submitted_at >= since, Submission.submitted_at < until],
                postgres,
                counted,
                tag=index,
            )
        ]
        for index, name, json_text, count in await session.execute(union_all(*parts)):
            if name in keys or name == ENDING:
                add_pair(found[index], name, json_text, count)
    return found


def add_pair(tallies: Tallies, name: str, json_text: str | None, count: int) -> None:
    """Add `count` submissions holding the pair to `tallies`: an ending's, a
    key's value (JSON text) or a key alone (None)."""
    if not count:
        return
    if name == ENDING:
        tallies.endings[orjson.loads(json_text or "null")] += count
        tallies.submissions += count
        return
    tallies.answered[name] += count
    if json_text:
        tallies.values.setdefault(name, Counter())[orjson.loads(json_text)] += count
