"""Partial responses: a respondent's answers on their way through a form
with pages, kept so they can leave and come back through a link, and so a
form's owner sees where people stop.

The link carries a secret of 256 random bits; only its SHA-256 is stored.
Each page a respondent moves to saves their answers, so the link opens the
form where they left off. Completing the form makes an ordinary submission
and erases the answers kept here (submission/intake.py); partials expire
after the form's `resumeDays` and are purged with their answers.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import Conflict, NotFound, PayloadTooLarge
from formsapi.kit.ids import new_id
from formsapi.kit.time import isoformat_z
from formsapi.models import PartialResponse
from formsapi.partial import repository
from formsapi.partial.repository import PartialRow

# The token's length in URL-safe base64: 32 random bytes.
TOKEN_LENGTH = 43
# Answers kept for a respondent, encoded, at most: a form's own answers fit
# (a long text holds 10,000 characters), a script's megabyte does not.
MAX_ANSWERS_BYTES = 256 * 1024


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes | None:
    """The stored form of a resume token; None for a string that cannot be one."""
    if len(token) != TOKEN_LENGTH or not token.isascii():
        return None
    if not all(c.isalnum() or c in "-_" for c in token):
        return None
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True, slots=True)
class Resumed:
    answers: dict[str, Any]
    page: int
    started_at: datetime


@dataclass(frozen=True, slots=True)
class Kept:
    token: str  # of the respondent's link
    # The furthest page (from 0) their partial had reached before; None for a new one.
    reached_before: int | None


class LinkUsed(Conflict):
    """The answers of this link were sent already: the form is complete."""

    def __init__(self) -> None:
        super().__init__("These answers were sent already: the form is complete.")


async def save(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    token: str | None,
    answers: dict[str, Any],
    page: int,
    now: datetime,
    keep_days: int,
) -> Kept:
    """Keep a respondent's answers so far and the page they reached; the
    token of their link (a new one when they had none, or theirs had expired
    or was used), and the furthest page they had reached before."""
    if len(orjson.dumps(answers)) > MAX_ANSWERS_BYTES:
        raise PayloadTooLarge("These answers are too long to save.")
    expires_at = now + timedelta(days=keep_days)
    hashed = token_hash(token) if token else None
    if hashed is not None:
        before = await repository.save(
            session, organization_id, form_id, hashed, answers, page, now, expires_at
        )
        if before is not None:
            assert token is not None
            return Kept(token, before)
        if await repository.completed_among(session, organization_id, form_id, [hashed]):
            raise LinkUsed  # a tab left open after sending: no second copy of the answers
    token = new_token()
    await repository.add(
        session,
        PartialResponse(
            id=new_id("prt"),
            organization_id=organization_id,
            form_id=form_id,
            token_hash=token_hash(token),
            answers=answers,
            page=page,
            reached=page,
            started_at=now,
            updated_at=now,
            expires_at=expires_at,
        ),
    )
    return Kept(token, None)


async def resume(
    session: AsyncSession, organization_id: str, form_id: str, token: str, now: datetime
) -> Resumed:
    """The answers and page a link opens. NotFound for a link that was never
    made, has expired or was erased; LinkUsed once the form was sent."""
    hashed = token_hash(token)
    found = (
        None if hashed is None else await repository.find(session, organization_id, form_id, hashed)
    )
    if found is None or (found.completed_at is None and found.expires_at <= now):
        raise NotFound("This link to resume the form is not valid: it may have expired.")
    if found.completed_at is not None:
        raise LinkUsed
    return Resumed(dict(found.answers or {}), found.page, found.started_at)


def view(row: PartialRow, with_answers: bool) -> dict[str, Any]:
    """A partial as the API shows it."""
    shown: dict[str, Any] = {
        "id": row.id,
        "startedAt": isoformat_z(row.started_at),
        "updatedAt": isoformat_z(row.updated_at),
        "expiresAt": isoformat_z(row.expires_at),
        "lastPage": row.reached + 1,
    }
    if with_answers:
        shown["answers"] = row.answers or {}
    return shown
