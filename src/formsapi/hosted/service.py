"""The respondent's side: a form's public page turns posted fields into
answers and takes them through the same validation as the API."""

from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import repository as form_repository
from formsapi.form.blocks import (
    Block,
    BlockList,
    MultipleChoice,
    Number,
    Question,
    Rating,
    questions,
)
from formsapi.kit.ids import is_plausible
from formsapi.models import Form

HONEYPOT = "website"


class Posted(Protocol):
    """The fields of a posted form (the web framework's FormData fits)."""

    def get(self, key: str) -> object: ...

    def getlist(self, key: str) -> list[Any]: ...  # a field people never see and bots fill in


async def public_form(session: AsyncSession, form_id: str) -> tuple[Form, list[str]] | None:
    """The form, if public, and the origins allowed to show it in a frame."""
    found = await form_repository.get_public(session, form_id) if is_plausible(form_id) else None
    return None if found is None else (found[0], list(found[1] or []))


def blocks_of(form: Form) -> list[Block]:
    return BlockList.validate_python(form.blocks)


def _typed(question: Question, raw: str) -> Any:
    """A posted string as the type its question answers; unparseable numbers go
    through as text, so validation reports them in its own words."""
    if isinstance(question, Number | Rating):
        try:
            number = float(raw)
        except ValueError:
            return raw
        return int(number) if number.is_integer() else number
    return raw


def answers_from(blocks: list[Block], posted: Posted) -> dict[str, Any]:
    """Posted fields to answers: empty fields are no answer; checkboxes join."""
    answers: dict[str, Any] = {}
    for question in questions(blocks):
        if isinstance(question, MultipleChoice):
            chosen = [v for v in posted.getlist(question.key) if isinstance(v, str) and v]
            if chosen:
                answers[question.key] = ",".join(chosen)
            continue
        raw = posted.get(question.key)
        if isinstance(raw, str) and raw.strip():
            answers[question.key] = _typed(question, raw.strip())
    return answers


def is_spam(posted: Posted) -> bool:
    return bool(posted.get(HONEYPOT))
