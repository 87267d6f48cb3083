"""Spam kept out of hosted pages: why a post is refused, and how many were,
per form, day and reason, for the form's admins to notice a false positive.
A refused post stores nothing else: no submission, no event, no delivery."""

from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.spam import repository


class Reason(StrEnum):
    honeypot = "honeypot"  # the field people never see was filled in
    too_fast = "too-fast"  # sent sooner after the page was served than a person can
    challenge_missing = "challenge-missing"  # no proof of work (no script, or a bot)
    challenge_invalid = "challenge-invalid"  # forged, altered, or another form's
    challenge_expired = "challenge-expired"  # solved longer ago than it lives
    challenge_replayed = "challenge-replayed"  # a solution already spent on a post
    rate_limited_ip = "rate-limited-ip"  # past FORMSAPI_PUBLIC_POSTS_PER_IP
    rate_limited_form = "rate-limited-form"  # past FORMSAPI_PUBLIC_POSTS_PER_FORM


DEFAULT_DAYS = 30
MAX_DAYS = 366


def since(days: int) -> date:
    """The first day of the last `days` UTC days, today included."""
    return utcnow().date() - timedelta(days=days - 1)


async def refusals(
    session: AsyncSession, organization_id: str, form_id: str, days: int = DEFAULT_DAYS
) -> list[dict[str, Any]]:
    """The form's refused posts per UTC day and reason over the last `days`
    days, newest day first; days without a refusal are left out. Another
    organization's form is not found, as a missing one."""
    await form_service.get(session, organization_id, form_id)
    found = await repository.counts(session, organization_id, form_id, since(days))
    return [{"day": day.isoformat(), "reason": reason, "count": n} for day, reason, n in found]
