"""Who may answer a form's hosted page, and how often (admission/): its
password, and one response per respondent by cookie, IP address or
invitation link (one per email address is decided in the intake, under
the form's lock, for the API's posts too).

A right password sets a signed cookie for that form (HttpOnly, SameSite=Lax,
scoped to /f/{id}, UNLOCK_LIFETIME), which every page, post and upload of the
form checks; a new password makes the old cookies worthless (its hash is in
the signature). Wrong guesses are limited per address and per form
(ratelimit PasswordThrottle). A form taking one response per browser sets
another signed cookie when it takes answers. One per IP address keeps the
address's keyed hash for the window, in Redis when configured (shared by
every process), else in the database.
"""

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qsl, urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from formsapi.admission import service as admission_service
from formsapi.admission.service import Digests, Opened
from formsapi.db.session import session_scope
from formsapi.dependencies import client_ip
from formsapi.kit.breaker import Open
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import utcnow
from formsapi.language.compiled import Compiled
from formsapi.models import Form
from formsapi.services import services

log = logging.getLogger("formsapi")

UNLOCKED_COOKIE = "formsapi_unlocked"
ANSWERED_COOKIE = "formsapi_answered"
# A right password lets its browser in for this long.
UNLOCK_LIFETIME = timedelta(hours=2)
# A browser that answered is told so for this long (or until its cookies go).
ANSWERED_LIFETIME = timedelta(days=400)
# The posted field and the link's parameter that carry an invitation's token.
INVITE = "invite"
INVITE_FIELD = "_invite"
_REDIS_ERRORS = (OSError, Open, TimeoutError)

# The hosted page's message page: (request, heading, message, status).
PageMaker = Callable[[Request, str, str, int], HTMLResponse]


def _message(*parts: str) -> bytes:
    return "\n".join(("formsapi hosted cookie", *parts)).encode()


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _path(form: Form) -> str:
    return f"/f/{form.id}"


def _read(request: Request, name: str) -> tuple[int, str] | None:
    raw = request.cookies.get(name, "")
    seconds, dot, signature = raw.partition(".")
    if not dot or len(raw) > 100 or not (seconds.isascii() and seconds.isdigit()):
        return None
    return int(seconds[:12]), signature


def _password_tag(form: Form) -> str:
    # The hash's own digest: a new password (a new hash) voids every cookie.
    return hashlib.sha256((form.password_hash or "").encode()).hexdigest()


def unlocked(request: Request, form: Form) -> bool:
    """Whether this browser may see the form: it has no password, or the
    browser's cookie says the right one was given, for this password, lately."""
    if form.password_hash is None:
        return True
    box: SecretBox | None = services(request).secret_box
    found = _read(request, UNLOCKED_COOKIE)
    if box is None or found is None:
        return False
    until, signature = found
    if until <= utcnow().timestamp():
        return False
    return box.verify(_message("unlocked", form.id, str(until), _password_tag(form)), signature)


def set_unlocked(request: Request, response: Response, form: Form) -> None:
    box = services(request).secret_box
    assert box is not None  # a password needs the service's key (admission/service.py)
    until = int((utcnow() + UNLOCK_LIFETIME).timestamp())
    signature = box.sign(_message("unlocked", form.id, str(until), _password_tag(form)))
    response.set_cookie(
        UNLOCKED_COOKIE,
        f"{until}.{signature}",
        max_age=int(UNLOCK_LIFETIME.total_seconds()),
        path=_path(form),
        secure=_secure(request),
        httponly=True,
        samesite="lax",
    )


def answered(request: Request, form: Form) -> bool:
    """Whether this browser's cookie says it answered the form."""
    box: SecretBox | None = services(request).secret_box
    found = _read(request, ANSWERED_COOKIE)
    if box is None or found is None:
        return False
    at, signature = found
    return box.verify(_message("answered", form.id, str(at)), signature)


def set_answered(request: Request, response: Response, form: Form) -> None:
    box: SecretBox | None = services(request).secret_box
    if box is None:
        return
    at = str(int(utcnow().timestamp()))
    response.set_cookie(
        ANSWERED_COOKIE,
        f"{at}.{box.sign(_message('answered', form.id, at))}",
        max_age=int(ANSWERED_LIFETIME.total_seconds()),
        path=_path(form),
        secure=_secure(request),
        httponly=True,
        samesite="lax",
    )


def next_query(text: object) -> str:
    """The link's query string a password page carries back, rebuilt from
    its pairs (nothing but a query can come of it)."""
    if not isinstance(text, str) or len(text) > 4000:
        return ""
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=100)
    except ValueError:  # more fields than a link carries
        return ""
    return urlencode(pairs)


# One response per IP address.


def _ip_digest(request: Request, form: Form) -> bytes | None:
    box: SecretBox | None = services(request).secret_box
    if box is None:
        return None
    return Digests(box).ip(form.id, client_ip(request))


def _redis_key(request: Request, form: Form, digest: bytes) -> str:
    return f"{services(request).settings.redis_prefix}:once-ip:{form.id}:{digest.hex()}"


async def ip_taken(request: Request, form: Form) -> bool:
    """Whether the address posting has answered the form within its window."""
    digest = _ip_digest(request, form)
    if digest is None:
        return False
    redis = services(request).redis
    if redis is not None:
        try:
            [found] = await redis.execute(("EXISTS", _redis_key(request, form, digest)))
        except _REDIS_ERRORS as error:
            log.warning("one-response store unavailable (%s): using the database", error)
        else:
            return bool(found)
    async with services(request).read_sessionmaker() as session:
        return await admission_service.answered(
            session, form.organization_id, form.id, admission_service.IP, digest, utcnow()
        )


async def claim_ip(request: Request, form: Form) -> bool:
    """Take the address's one response for the window, before the answers
    are written: False when it was taken (by another post, even now)."""
    digest = _ip_digest(request, form)
    if digest is None:
        return True
    hours = form.one_response_hours or 24
    redis = services(request).redis
    if redis is not None:
        key = _redis_key(request, form, digest)
        try:
            [reply] = await redis.execute(("SET", key, "1", "NX", "PX", hours * 3_600_000))
        except _REDIS_ERRORS as error:
            log.warning("one-response store unavailable (%s): using the database", error)
        else:
            return reply is not None
    now = utcnow()
    async with session_scope(services(request).sessionmaker) as session:
        return await admission_service.take(
            session,
            form.organization_id,
            form.id,
            admission_service.IP,
            digest,
            now,
            now + timedelta(hours=hours),
        )


async def release_ip(request: Request, form: Form) -> None:
    """Give the address its response back: its answers were not taken."""
    digest = _ip_digest(request, form)
    if digest is None:
        return
    redis = services(request).redis
    if redis is not None:
        try:
            await redis.execute(("DEL", _redis_key(request, form, digest)))
        except _REDIS_ERRORS as error:
            log.warning("one-response store unavailable (%s): using the database", error)
        else:
            return
    async with session_scope(services(request).sessionmaker) as session:
        await admission_service.give_back(
            session, form.organization_id, form.id, admission_service.IP, digest
        )


# The gate every page of the form passes.


@dataclass(frozen=True, slots=True)
class Admitted:
    """A respondent let in: with the invitation link they came through
    (its token, carried from page to page) for a form taking answers by
    invitation only."""

    invitation: Opened | None = None
    token: str | None = None

    def fields(self, version: Compiled) -> dict[str, str]:
        """What their link puts into the form's hidden fields (those it has)."""
        if self.invitation is None:
            return {}
        declared = {field.key for field in version.definition.hidden_fields}
        return {k: v for k, v in self.invitation.fields.items() if k in declared}


_INVITATION_PAGES = {
    "missing": (
        "By invitation only",
        "This form takes answers through personal invitation links only. Open it through the "
        "link you were sent.",
        403,
    ),
    "unknown": (
        "Link not valid",
        "This invitation link is not valid. Check that you opened the whole link you were sent.",
        404,
    ),
    "used": (
        "Already answered",
        "This invitation link was used already: its answers were sent. Thank you.",
        410,
    ),
    "revoked": ("Link not valid", "This invitation link is no longer valid.", 410),
}


async def already(request: Request, form: Form, page: PageMaker) -> Response | None:
    """The page telling a browser or an address that answered the form so,
    or None."""
    by = form.one_response_by
    if by == "cookie" and answered(request, form):
        return page(request, form.title, "You have answered this form already. Thank you.", 409)
    if by == "ip" and await ip_taken(request, form):
        return page(request, form.title, _IP_TAKEN.format(hours=form.one_response_hours), 409)
    return None


_IP_TAKEN = (
    "A response from your network address was taken already. This form takes one per "
    "address every {hours} hours."
)


def ip_taken_page(request: Request, form: Form, page: PageMaker) -> HTMLResponse:
    return page(request, form.title, _IP_TAKEN.format(hours=form.one_response_hours), 409)


async def admit(
    request: Request,
    form: Form,
    token: object,
    page: PageMaker,
    locked: Callable[[], Response],
) -> Admitted | Response:
    """Let a respondent in, or the page saying why not: the password asked
    (`locked`, the page asking for it), a browser or address that answered
    already, or an invitation link missing, used or revoked."""
    if not unlocked(request, form):
        return locked()
    if (refused := await already(request, form, page)) is not None:
        return refused
    if form.one_response_by != "invitation":
        return Admitted()
    given = token if isinstance(token, str) else None
    async with services(request).read_sessionmaker() as session:
        opened = await admission_service.opened(session, form.organization_id, form.id, given)
    if isinstance(opened, str):
        heading, message, status = _INVITATION_PAGES[opened]
        return page(request, heading, message, status)
    return Admitted(opened, given)


async def email_taken(request: Request, form: Form, answers: dict[str, object]) -> str | None:
    """For a form taking one response per email address, the key of its
    email question when the address answered holds one that was taken
    already: said on the page it is typed on, before the pages after it are
    filled in. (Only a hint: the intake decides, under the form's lock.)"""
    question = form.one_response_question
    box: SecretBox | None = services(request).secret_box
    if form.one_response_by != admission_service.EMAIL or question is None or box is None:
        return None
    address = answers.get(question)
    if not isinstance(address, str) or not address.strip():
        return None
    digest = Digests(box).email(form.id, address)
    async with services(request).read_sessionmaker() as session:
        taken = await admission_service.answered(
            session, form.organization_id, form.id, admission_service.EMAIL, digest, utcnow()
        )
    return question if taken else None
