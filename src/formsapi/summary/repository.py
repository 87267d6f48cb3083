"""The tallies behind a form's answer summary, counted by the database in one
statement over the submissions a filter matches: per answer key, how many
hold it (and, for the keys whose values count, how many hold each value),
how many reached each ending, and how many there are. One statement, so the
figures agree with each other whatever is written meanwhile."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    Text,
    case,
    cast,
    func,
    literal,
    literal_column,
    null,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB

from formsapi.db import ReadSession
from formsapi.models import Submission
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


# The kinds of row the statement returns: a key's answers (per value, for
# the valued keys), submissions per ending, a group's answers.
_ANSWERED, _ENDING, _GROUP = "a", "e", "g"


async def tallies(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    filters: Filters,
    valued: Sequence[str],
    groups: dict[str, str],
) -> Tallies:
    """The tallies of the form's submissions that `filters` match. `valued`:
    the keys whose values are counted; `groups`: answer keys counted together
    as one more key (a matrix's rows, as the matrix), answered when any is."""
    postgres = session.get_bind().dialect.name == "postgresql"
    matching = [
        scoped(Submission, organization_id),
        Submission.form_id == form_id,
        *_conditions(filters, postgres),
    ]
    if postgres:
        pairs = func.jsonb_each(Submission.answers).table_valued("key", "value").lateral()
        value: ColumnElement[Any] = cast(pairs.c.value, Text)  # JSON text
    else:
        pairs = func.json_each(Submission.answers).table_valued("key", "value", "type")
        # json_each gives SQL values; json_quote makes them JSON text again.
        value = func.json_quote(pairs.c.value)
    key: ColumnElement[str] = pairs.c.key
    # One pass over the answers: a valued key's rows per value, any other
    # key's in one row (value NULL). A key is answered as often as its rows
    # count, whatever their values.
    counted = case((key.in_(valued), value), else_=null()) if valued else null()
    parts = [
        select(literal(_ANSWERED), key, counted, func.count())
        .select_from(Submission)
        .join(pairs, true())
        .where(*matching)
        # By position: the CASE's bound keys would make it another expression.
        .group_by(literal_column("2"), literal_column("3")),
        select(literal(_ENDING), Submission.ending, null(), func.count())
        .where(*matching)
        .group_by(Submission.ending),
    ]
    if groups:
        group = case(groups, value=key)
        parts.append(
            select(literal(_GROUP), group, null(), func.count(Submission.id.distinct()))
            .select_from(Submission)
            .join(pairs, true())
            .where(*matching, key.in_(list(groups)))
            .group_by(literal_column("2"))
        )
    found = Tallies()
    for kind, name, json_text, count in await session.execute(union_all(*parts)):
        if kind == _ENDING:
            found.endings[name] += count
            found.submissions += count
            continue
        found.answered[name] += count
        if json_text is not None:
            found.values.setdefault(name, Counter())[orjson.loads(json_text)] += count
    return found


def _conditions(filters: Filters, postgres: bool) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.since is not None:
        conditions.append(Submission.submitted_at >= filters.since)
    if filters.until is not None:
        conditions.append(Submission.submitted_at < filters.until)
    if filters.version is not None:
        conditions.append(Submission.form_version == filters.version)
    if filters.hidden is not None:
        name, text = filters.hidden
        conditions.append(_text_of(name, postgres) == text)
    answer = filters.answer
    if answer is not None:
        if answer.includes:
            # Options are joined by commas and hold none themselves.
            listed = literal(",") + _text_of(answer.key, postgres) + literal(",")
            position = func.strpos if postgres else func.instr
            conditions.append(position(listed, f",{answer.value},") > 0)
        elif isinstance(answer.value, str):
            conditions.append(_text_of(answer.key, postgres) == answer.value)
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


def _text_of(key: str, postgres: bool) -> ColumnElement[str]:
    """The answer to `key` as text (a string answer's own text)."""
    if postgres:
        return Submission.answers.op("->>")(key)
    return func.json_extract(Submission.answers, _path(key))


def _path(key: str) -> str:
    # Keys are letters, digits, underscores and dots (a matrix row): quoted,
    # a dot is part of the name.
    return f'$."{key}"'
