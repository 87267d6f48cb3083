"""Shared reports: a form's summary published read-only at an unguessable
link, for people without an account.

The link carries 256 random bits; only their SHA-256 is stored, so the link
is shown once, to whoever makes it. A report shows figures only (never an
answer's text nor a file's name: the summary holds none), leaves out the
questions chosen, and withholds every count under its threshold k, and every
figure worked out from fewer than k answers (web.charts does the withholding,
for every chart the same way).

Withholding a count under k hides a cell of one read, not the difference of
two reads: read before and after one person answers, a live report would
tell their answer. So a report with k above 1 shows released figures: kept
when released, and released again at most once a UTC day, and only once at
least k submissions have been made since the last release. Two reads either
show the same figures, or figures k or more submissions apart; answers
corrected or erased in between go with those. With k = 1 (nothing withheld)
a report is live."""

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, NotFound
from formsapi.form import service as form_service
from formsapi.kit.ids import new_id
from formsapi.language.blocks import questions
from formsapi.models import ReportLink
from formsapi.summary import report_repository as repository

# The token's length in URL-safe base64: 32 random bytes.
TOKEN_LENGTH = 43
DEFAULT_MIN_COUNT = 5
MAX_MIN_COUNT = 1000
# How long a link may work at most.
MAX_LIFE = timedelta(days=366)


class ReportLinkNotFound(NotFound):
    """No such report link for this form (the same words for another organization's)."""

    def __init__(self) -> None:
        super().__init__("There is no such report link for this form.")


@dataclass(frozen=True, slots=True)
class Created:
    link: ReportLink
    token: str  # the only copy: shown once


def token_hash(token: str) -> bytes | None:
    """The stored form of a report's token; None for a string that cannot be one."""
    if len(token) != TOKEN_LENGTH or not token.isascii():
        return None
    if not all(c.isalnum() or c in "-_" for c in token):
        return None
    return hashlib.sha256(token.encode()).digest()


async def create(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    created_by: str | None,
    *,
    expires_at: datetime,
    hidden_questions: Sequence[str],
    min_count: int,
    now: datetime,
) -> Created:
    """A new link to the form's report. The questions left out must be the
    form's; the link must expire within a year; k is 1 (nothing withheld) to 1,000."""
    form = await form_service.get(session, organization_id, form_id)
    keys = {question.key for question in questions(form_service.current(form).blocks)}
    unknown = sorted(set(hidden_questions) - keys)
    if unknown:
        raise BadRequest(f"The form has no question '{unknown[0][:64]}'.")
    if not 1 <= min_count <= MAX_MIN_COUNT:
        raise BadRequest(f"The smallest count shown must be between 1 and {MAX_MIN_COUNT:,}.")
    if expires_at <= now:
        raise BadRequest("The link must expire in the future.")
    if expires_at > now + MAX_LIFE:
        raise BadRequest("A report link works for a year at most.")
    token = secrets.token_urlsafe(32)
    hashed = token_hash(token)
    assert hashed is not None
    link = ReportLink(
        id=new_id("rpl"),
        organization_id=organization_id,
        form_id=form.id,
        token_hash=hashed,
        created_by=created_by,
        created_at=now,
        expires_at=expires_at,
        revoked_at=None,
        hidden_questions=sorted(set(hidden_questions)),
        min_count=min_count,
    )
    await repository.add(session, link)
    return Created(link, token)


async def of_form(
    session: AsyncSession, organization_id: str, form_id: str
) -> Sequence[ReportLink]:
    """The form's links, newest first, revoked and expired ones included."""
    return await repository.of_form(session, organization_id, form_id)


async def revoke(
    session: AsyncSession, organization_id: str, form_id: str, link_id: str, now: datetime
) -> ReportLink:
    """The link stops working at once, and the figures it released go
    (revoking it again changes nothing)."""
    link = await repository.get(session, organization_id, form_id, link_id)
    if link is None:
        raise ReportLinkNotFound()
    if link.revoked_at is None:
        link.revoked_at = now
        link.released_at, link.release = None, None
        await session.flush()
    return link


def status(link: ReportLink, now: datetime) -> str:
    if link.revoked_at is not None:
        return "revoked"
    return "expired" if link.expires_at <= now else "active"


async def open_link(session: AsyncSession, token: str, now: datetime) -> ReportLink | None:
    """The link a token opens; None when it is malformed, unknown, revoked
    or expired, alike: whoever holds a dead link learns nothing from it."""
    hashed = token_hash(token)
    if hashed is None:
        return None
    link = await repository.by_token(session, hashed)
    if link is None or status(link, now) != "active":
        return None
    return link


@dataclass(frozen=True, slots=True)
class Release:
    """The figures a report shows (what web.summary.Figures dumps), and when
    they were released."""

    at: datetime
    figures: dict[str, Any]


def live(link: ReportLink) -> bool:
    """Whether the report shows figures as they are now: with k = 1 nothing
    is withheld, and so nothing is hidden by releasing."""
    return link.min_count <= 1


def _day(at: datetime) -> datetime:
    return datetime.combine(at.astimezone(UTC).date(), time(), UTC)


def released(link: ReportLink) -> Release | None:
    if link.released_at is None or link.release is None:
        return None
    return Release(link.released_at, link.release)


async def release_due(session: AsyncSession, link: ReportLink, now: datetime) -> bool:
    """Whether the report's figures are to be released now: never released,
    or released before today (UTC) and k submissions made since."""
    if link.released_at is None or link.release is None:
        return True
    if link.released_at >= _day(now):
        return False
    made = await repository.submitted_since(
        session, link.organization_id, link.form_id, link.released_at, link.min_count
    )
    return made >= link.min_count


async def publish(
    session: AsyncSession, link: ReportLink, figures: dict[str, Any], now: datetime
) -> Release:
    """Release `figures`, unless another reader released the link's today
    first: the release that stands."""
    if await repository.release(session, link.organization_id, link.id, figures, now, _day(now)):
        return Release(now, figures)
    found = await repository.released(session, link.organization_id, link.id)
    if found is None:  # revoked or deleted meanwhile: shown once, as made
        return Release(now, figures)
    return Release(*found)
