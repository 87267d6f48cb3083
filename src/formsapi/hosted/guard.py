"""Spam kept out of the hosted page (spam/): the checks a post passes before
anything of it is stored, the challenge the page's widget fetches, and what
a refused sender sees. Every refusal is counted for the form's admins, and
stores nothing else.

A filled honeypot is answered as a submission taken would be (303 to the
thank-you page): a bot learns nothing to adapt to; it counts against the
public page's limits as any other post. The limits answer 429 with
Retry-After; a challenge not passed, a page saying the answers were not sent
and why, for the person whose browser it was.
"""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated

import orjson
from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from formsapi.dependencies import client_ip
from formsapi.errors import FormNotFound, RateLimited
from formsapi.hosted import service
from formsapi.models import Form
from formsapi.services import services
from formsapi.spam.challenge import FIELD
from formsapi.spam.service import Reason

router = APIRouter(include_in_schema=False)

# The hosted page's message page: (request, heading, message, status).
PageMaker = Callable[[Request, str, str, int], HTMLResponse]

_LIMITED = {"address": Reason.rate_limited_ip, "form": Reason.rate_limited_form}
_NOT_SENT = "Your answers were not sent"
_CHALLENGE_PAGES = {
    Reason.challenge_missing: (
        "This form checks that a person is sending it with a short computation in the "
        "browser, which needs JavaScript. Turn JavaScript on, go back and send it again."
    ),
    Reason.challenge_expired: (
        "The check that a person is sending this form ran too long ago. Go back and send it again."
    ),
}
_TOO_FAST = (
    "The form was sent moments after it opened, sooner than a person fills it in. "
    "Go back, check your answers and send it again."
)
_CHALLENGE_FAILED = (
    "The check that a person is sending this form did not pass. Go back and send it again."
)


def count(request: Request, form: Form, reason: Reason) -> None:
    """Count one refused post of `form`: held in the process and written
    every few seconds (spam/buffer.py), so a flood of refused posts costs no
    write each."""
    services(request).refusals.add(form.organization_id, form.id, reason)


async def _limited(request: Request, form: Form) -> tuple[Reason, int] | None:
    wait, which = await services(request).public_post_throttle.post(form.id, client_ip(request))
    if not wait:
        return None
    assert which is not None  # refused: by which counter
    reason = _LIMITED[which]
    count(request, form, reason)
    return reason, wait


async def refused_post(
    request: Request, form: Form, posted: service.Posted, page: PageMaker
) -> Response | None:
    """The answer to a post of the form's page refused as spam (past the
    public page's limits, then the honeypot), or None to go on. A post
    filling the honeypot counts against the limits as any other: one
    address gets no more of them than of answers."""
    if (limited := await _limited(request, form)) is not None:
        _, wait = limited
        refused = page(
            request, "Too many requests", "Please wait a minute and send the form again.", 429
        )
        refused.headers["Retry-After"] = str(wait)
        return refused
    if service.is_spam(posted, service.honeypot(services(request).secret_box, form.id)):
        count(request, form, Reason.honeypot)
        return RedirectResponse(f"/f/{form.id}/thanks", status_code=303)
    return None


async def refused_upload(request: Request, form: Form) -> None:
    """Raise RateLimited (a problem document for the page's script) for an
    upload past the public page's limits."""
    if (limited := await _limited(request, form)) is not None:
        _, wait = limited
        raise RateLimited(
            "Too many posts to this form; try again later.", headers={"Retry-After": str(wait)}
        )


async def refused_too_fast(
    request: Request, form: Form, served_at: datetime | None, now: datetime, page: PageMaker
) -> Response | None:
    """The page refusing a submission sent sooner after its first page was
    served than FORMSAPI_MIN_FILL_SECONDS; None to go on. A post without the
    page's stamp (a site's own HTML form posting here) is not timed."""
    least = services(request).settings.min_fill_seconds
    if served_at is None or not least or (now - served_at).total_seconds() >= least:
        return None
    count(request, form, Reason.too_fast)
    return page(request, _NOT_SENT, _TOO_FAST, 422)


async def refused_challenge(
    request: Request, form: Form, posted: service.Posted, page: PageMaker
) -> Response | None:
    """For a form asking for a proof of work, the page refusing a submission
    whose solution is missing, forged, another form's, expired or spent
    before; None to go on (the solution is spent now)."""
    if not form.challenge:
        return None
    reason = await services(request).challenges.check(form.id, posted.get(FIELD))
    if reason is None:
        return None
    count(request, form, reason)
    return page(request, _NOT_SENT, _CHALLENGE_PAGES.get(reason, _CHALLENGE_FAILED), 422)


@router.get("/f/{form_id}/challenge")
async def challenge(
    request: Request, form_id: Annotated[str, PathParam(max_length=64)]
) -> Response:
    """A proof-of-work challenge for one post of the form, as the page's
    widget fetches it; only for a form taking answers that asks for one."""
    limiter = services(request).rate_limiter
    if limiter.enabled:
        await limiter.check(client_ip(request), "standard")
    async with services(request).read_sessionmaker() as session:
        found = await service.public_form(session, form_id)
    challenges = services(request).challenges
    if found is None or not found[0].challenge or not challenges.available:
        raise FormNotFound(form_id)
    form, request.state.frame_ancestors = found
    body = orjson.dumps(challenges.new(form.id))
    return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})
