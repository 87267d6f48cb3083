"""The SQL that finds one respondent's answers across an organization's
forms: submissions and partial responses whose answer to a given question
equals a value, read with each engine's JSON functions."""

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import PartialResponse, Submission
from formsapi.tenancy import scoped

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
FOLD = str.maketrans(_UPPER, _LOWER)


def _text_of(answers: Any, key: str, postgres: bool) -> ColumnElement[str]:
    """The answer to `key` as text (a string answer's own text)."""
    if postgres:
        return answers.op("->>")(key)  # type: ignore[no-any-return]
    # Keys are letters, digits, underscores and dots (a matrix row): quoted,
    # a dot is part of the name. The path is a bound value, never SQL.
    return func.json_extract(answers, f'$."{key}"')


def _folded(text: ColumnElement[str], postgres: bool) -> ColumnElement[str]:
    # ASCII letters only on both engines (SQLite's lower() folds no other):
    # the same address matches the same rows whichever engine holds them.
    return func.translate(text, _UPPER, _LOWER) if postgres else func.lower(text)


def matching(
    answers: Any, form_id: Any, keys: Mapping[str, Sequence[str]], value: str, fold: bool, pg: bool
) -> ColumnElement[bool]:
    """Rows whose answer to one of `keys` equals `value`, each key only in
    the forms that ask it that way (`keys`: key to form ids)."""
    wanted = value.translate(FOLD) if fold else value
    return or_(
        *(
            and_(
                form_id.in_(list(forms)),
                (_folded(_text_of(answers, key, pg), pg) if fold else _text_of(answers, key, pg))
                == wanted,
            )
            for key, forms in sorted(keys.items())
        )
    )


async def submissions(
    session: AsyncSession,
    organization_id: str,
    keys: Mapping[str, Sequence[str]],
    value: str,
    fold: bool,
    limit: int,
) -> Sequence[Submission]:
    """Up to `limit` of the organization's matching submissions, oldest first."""
    postgres = session.get_bind().dialect.name == "postgresql"
    statement = (
        select(Submission)
        .where(
            scoped(Submission, organization_id),
            matching(Submission.answers, Submission.form_id, keys, value, fold, postgres),
        )
        .order_by(Submission.submitted_at, Submission.id)
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def partials(
    session: AsyncSession,
    organization_id: str,
    keys: Mapping[str, Sequence[str]],
    value: str,
    fold: bool,
    limit: int,
) -> Sequence[PartialResponse]:
    """Up to `limit` of the organization's matching partial responses not
    completed (a completed one's answers are already gone), oldest first."""
    postgres = session.get_bind().dialect.name == "postgresql"
    statement = (
        select(PartialResponse)
        .where(
            scoped(PartialResponse, organization_id),
            PartialResponse.completed_at.is_(None),
            matching(PartialResponse.answers, PartialResponse.form_id, keys, value, fold, postgres),
        )
        .order_by(PartialResponse.started_at, PartialResponse.id)
        .limit(limit)
    )
    return (await session.scalars(statement)).all()


async def erase_partials(
    session: AsyncSession, organization_id: str, partial_ids: Sequence[str]
) -> list[tuple[str, dict[str, Any]]]:
    """Delete these partial responses; each one's form and the answers it held."""
    statement = (
        delete(PartialResponse)
        .where(scoped(PartialResponse, organization_id), PartialResponse.id.in_(partial_ids))
        .returning(PartialResponse.form_id, PartialResponse.answers)
    )
    connection = await session.connection()
    return [(row.form_id, dict(row.answers or {})) for row in await connection.execute(statement)]
