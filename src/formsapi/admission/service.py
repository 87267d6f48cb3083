"""One response per respondent, where a form asks for it.

A form may take one response per respondent, known by one of:
- `cookie`: a signed cookie its hosted page sets when it takes answers
  (hosted/once.py); a second visit from that browser is told it answered.
- `email`: the answer to one of its email questions, trimmed and casefolded;
  at most one submission per address, the API's included, decided under the
  form's lock in the intake (submission/intake.py), so exact however many
  posts race.
- `ip`: the address posting to its hosted page, once per window of hours.
- `invitation`: single-use links made through the API, each answered once,
  spent in the submission's own transaction.

Only keyed hashes of addresses are kept (HMAC-SHA256, its key derived from
FORMSAPI_SECRET_KEY, and the form's id in the message, so one person's
hashes on two forms cannot be matched); invitation links, like resume
links, keep only the SHA-256 of their token.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.admission import repository
from formsapi.admission.repository import InvitationRow
from formsapi.db.session import purge_in_batches
from formsapi.errors import Conflict, NotFound
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.models import FormInvitation

BY = ("cookie", "email", "ip", "invitation")
EMAIL, IP = "email", "ip"
# Hidden fields an invitation's email and label go into, when the form has them.
EMAIL_FIELD, LABEL_FIELD = "email", "label"


# A link's token in URL-safe base64: 32 random bytes.
TOKEN_LENGTH = 43


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes | None:
    """The stored form of a link's token; None for a string that cannot be one."""
    if len(token) != TOKEN_LENGTH or not token.isascii():
        return None
    if not all(c.isalnum() or c in "-_" for c in token):
        return None
    return hashlib.sha256(token.encode()).digest()


class AlreadyAnswered(Conflict):
    """The form takes one response per respondent, and this one has answered."""

    title = "Already answered"
    slug = "already-answered"

    def __init__(
        self, detail: str = "A response from this email address was taken already."
    ) -> None:
        super().__init__(detail)


class InvitationUsed(Conflict):
    """The invitation link was answered already, or revoked."""

    title = "Invitation used"
    slug = "invitation-used"

    def __init__(self) -> None:
        super().__init__("This invitation link was used already, or is no longer valid.")


class SecretKeyNeeded(Conflict):
    """The setting needs FORMSAPI_SECRET_KEY, which this server lacks."""

    title = "Secret key needed"
    slug = "secret-key-needed"


class InvitationNotFound(NotFound):
    def __init__(self, invitation_id: str) -> None:
        super().__init__(f"No invitation with id '{invitation_id}' for this form.")


def normalized_email(text: str) -> str:
    """An email answer as one person's: trimmed and casefolded (Ada@X.org
    and ada@x.org are one address; a mailbox's own rules, dots or plus
    tags, are not guessed)."""
    return text.strip().casefold()


@dataclass(frozen=True, slots=True)
class Digests:
    """The keyed hashes of respondents' addresses, under a key derived from
    the service's secret: a copy of the database alone names no one."""

    box: SecretBox

    def _key(self, kind: str) -> bytes:
        return self.box.sign(f"formsapi respondent {kind}".encode()).encode()

    def of(self, kind: str, form_id: str, value: str) -> bytes:
        message = f"{form_id}\n{value}".encode()
        return hmac.new(self._key(kind), message, hashlib.sha256).digest()

    def email(self, form_id: str, address: str) -> bytes:
        return self.of(EMAIL, form_id, normalized_email(address))

    def ip(self, form_id: str, address: str) -> bytes:
        return self.of(IP, form_id, address)


def setting(by: str | None, question: str | None, hours: int | None) -> dict[str, Any] | None:
    """A form's oneResponse as the API shows it."""
    if by is None:
        return None
    shown: dict[str, Any] = {"by": by}
    if by == EMAIL:
        shown["question"] = question
    if by == IP:
        shown["hours"] = hours
    return shown


# Respondents who answered (kept where no Redis keeps them).


async def answered(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    kind: str,
    digest: bytes,
    now: datetime,
) -> bool:
    """Whether the respondent of this keyed hash answered (within their window)."""
    return await repository.marked(session, organization_id, form_id, kind, digest, now)


async def take(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    kind: str,
    digest: bytes,
    now: datetime,
    until: datetime | None,
) -> bool:
    """Take the respondent's one response (until `until`; None: for good):
    False when it was taken, even by a transaction committing now."""
    marked = await repository.mark(session, organization_id, form_id, kind, [digest], now, until)
    return bool(marked)


async def give_back(
    session: AsyncSession, organization_id: str, form_id: str, kind: str, digest: bytes
) -> None:
    """Give a respondent their response back: their answers were not taken."""
    await repository.unmark(session, organization_id, form_id, kind, digest)


# Invitation links.


@dataclass(frozen=True, slots=True)
class Made:
    """A new link: its row, and its token (shown this once)."""

    invitation: FormInvitation
    token: str


async def invite(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    recipients: list[tuple[str | None, str | None]],
    now: datetime,
) -> list[Made]:
    """A single-use link for each (email, label) of `recipients` (the form's,
    checked by the caller)."""
    made = []
    for email, label in recipients:
        token = new_token()
        hashed = token_hash(token)
        assert hashed is not None
        row = FormInvitation(
            id=new_id("inv"),
            organization_id=organization_id,
            form_id=form_id,
            token_hash=hashed,
            email=email,
            label=label,
            created_at=now,
        )
        made.append(Made(row, token))
    await repository.add_invitations(session, [m.invitation for m in made])
    return made


async def listed(
    session: AsyncSession, organization_id: str, form_id: str, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of the form's links as the API lists them, newest first, and
    how many it has."""
    rows, total = await repository.invitations(session, organization_id, form_id, limit, offset)
    return [view(row) for row in rows], total


def view(row: InvitationRow | FormInvitation) -> dict[str, Any]:
    """A link as the API lists it (never its token)."""
    used, revoked = row.used_at, row.revoked_at
    return {
        "id": row.id,
        "email": row.email,
        "label": row.label,
        "status": "revoked" if revoked is not None else "used" if used is not None else "open",
        "createdAt": isoformat_z(row.created_at),
        "usedAt": isoformat_z(used) if used is not None else None,
        "revokedAt": isoformat_z(revoked) if revoked is not None else None,
    }


async def revoke(
    session: AsyncSession, organization_id: str, form_id: str, invitation_id: str, now: datetime
) -> None:
    """Revoke a link: it opens the form no more (a used one stays used)."""
    if not is_plausible(invitation_id) or not await repository.revoke(
        session, organization_id, form_id, invitation_id, now
    ):
        raise InvitationNotFound(invitation_id)


@dataclass(frozen=True, slots=True)
class Opened:
    """What a link opens: its hash (spent with the answers), and what it
    puts into the form's hidden fields."""

    hash: bytes
    fields: dict[str, str]


async def opened(
    session: AsyncSession, organization_id: str, form_id: str, token: str | None
) -> Opened | str:
    """The link `token` opens, or why not: "missing" (no token, or one that
    cannot be), "unknown", "used" or "revoked"."""
    hashed = token_hash(token) if token else None
    if hashed is None:
        return "missing"
    found = await repository.invitation(session, organization_id, form_id, hashed)
    if found is None:
        return "unknown"
    if found.revoked_at is not None:
        return "revoked"
    if found.used_at is not None:
        return "used"
    fields = {EMAIL_FIELD: found.email, LABEL_FIELD: found.label}
    return Opened(hashed, {key: value for key, value in fields.items() if value})


async def purge_lapsed(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Forget the addresses whose window has passed (the database's; Redis
    expires its own)."""
    return await purge_in_batches(sessionmaker, repository.purge_lapsed, utcnow())
