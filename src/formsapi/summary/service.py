"""A form's answer summary: the filters checked against the form, the
tallies counted (summary.repository), the figures worked out (summary.figures)."""

from datetime import datetime
from typing import Any

from formsapi.db import ReadSession
from formsapi.errors import BadRequest, NotFound
from formsapi.form import compiled
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.form.blocks import (
    OTHER,
    Dropdown,
    Matrix,
    MultipleChoice,
    Nps,
    Number,
    OtherText,
    Ranking,
    Rating,
    Scale,
    SingleChoice,
    YesNo,
    questions,
)
from formsapi.form.compiled import Compiled
from formsapi.kit.time import isoformat_z
from formsapi.summary import figures, repository
from formsapi.summary.repository import AnswerIs, Filters

# A filter's value, after the key and its colon.
FILTER_MAX = 300


async def summary(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
    hidden: str | None = None,
    answer: str | None = None,
) -> dict[str, Any]:
    """The summary of the form's submissions that the filters match, each
    question as its type calls for; with `version`, of that version's
    submissions, by that version's questions."""
    form = await form_service.get(session, organization_id, form_id)
    shown = await _version(session, form, version)
    if since is not None and until is not None and until <= since:
        raise BadRequest("`until` must be later than `since`: the range holds no moment.")
    filters = Filters(
        since=since,
        until=until,
        version=version,
        hidden=_hidden(shown, hidden) if hidden is not None else None,
        answer=_answer(shown, answer) if answer is not None else None,
    )
    tallies = await repository.tallies(session, organization_id, form.id, filters, shown.counted)
    return {
        "formId": form.id,
        "version": shown.version,
        "filters": {
            "since": isoformat_z(since) if since else None,
            "until": isoformat_z(until) if until else None,
            "version": version,
            "hidden": hidden,
            "answer": answer,
        },
        **figures.summarize(shown.blocks, shown.definition, tallies),
    }


async def _version(session: ReadSession, form: Any, version: int | None) -> Compiled:
    if version is None or version == form.version:
        return compiled.compile_version(
            form.organization_id, form.id, form.version, form.blocks, form.definition
        )
    snapshot = await form_repository.get_version(session, form.organization_id, form.id, version)
    if snapshot is None:
        raise NotFound(f"Form '{form.id}' has no version {version}; it is at {form.version}.")
    return compiled.compile_version(
        form.organization_id, form.id, snapshot.version, snapshot.blocks, snapshot.definition
    )


def _split(name: str, text: str) -> tuple[str, str]:
    key, colon, value = text.partition(":")
    if not colon or not key:
        raise BadRequest(f"`{name}` is a key, a colon and a value, such as `{name}=plan:business`.")
    if "\x00" in value:
        raise BadRequest(f"`{name}`'s value holds a NUL character, which no answer holds.")
    if len(value) > FILTER_MAX:
        raise BadRequest(f"`{name}`'s value is longer than {FILTER_MAX} characters.")
    return key, value


def _hidden(form: Compiled, text: str) -> tuple[str, str]:
    key, value = _split("hidden", text)
    keys = [field.key for field in form.definition.hidden_fields]
    if key not in keys:
        raise BadRequest(
            f"The form has no hidden field '{key[:64]}'"
            + (f"; it has: {', '.join(keys)}." if keys else ".")
        )
    return key, value


def _answer(form: Compiled, text: str) -> AnswerIs:
    """The answer filter, its value checked against the question it names."""
    key, value = _split("answer", text)
    parts = {part_key: (q, part) for q in questions(form.blocks) for part_key, part in q.parts()}
    if key not in parts:
        raise BadRequest(f"The form has no question '{key[:64]}'.")
    question, part = parts[key]
    if isinstance(part, OtherText):
        raise BadRequest(f"'{key}' is an Other text: filter by its choice, '{OTHER}'.")
    if isinstance(question, Matrix):
        columns = [column.value for column in question.columns]
        return AnswerIs(key, _one_of(key, value, columns))
    if isinstance(question, MultipleChoice):
        return AnswerIs(key, _one_of(key, value, question.values()), includes=True)
    if isinstance(question, SingleChoice | Dropdown):
        return AnswerIs(key, _one_of(key, value, question.values()))
    if isinstance(question, YesNo):
        return AnswerIs(key, _one_of(key, value, ["yes", "no"]))
    if isinstance(question, Rating | Scale | Nps | Number):
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if number != number or number in (float("inf"), float("-inf")):
            raise BadRequest(f"'{key}' is answered with a number; '{value[:64]}' is not one.")
        return AnswerIs(key, int(number) if number.is_integer() else number)
    if isinstance(question, Ranking):
        raise BadRequest(f"'{key}' is a ranking: filter by a choice, a scale or a number.")
    raise BadRequest(
        f"'{key}' is answered with free text: filter by a choice, yes/no, a rating, "
        "a scale or a number."
    )


def _one_of(key: str, value: str, values: list[str]) -> str:
    if value not in values:
        raise BadRequest(f"'{key}' has no choice '{value[:64]}'; it has: {', '.join(values)}.")
    return value
