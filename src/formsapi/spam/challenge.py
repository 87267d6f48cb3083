"""A form's proof-of-work challenge (ALTCHA), made and checked here: no
third party sees the respondent.

The respondent's browser is handed a challenge signed with a key derived
from the service's secret (FORMSAPI_SECRET_KEY, or SQLite's key file): find
the counter whose SHA-256 with the challenge's nonce and salt starts with
the given bytes. The counter is drawn around FORMSAPI_CHALLENGE_COST, so the
search costs that many hashes on average, where checking costs one HMAC (the
derived key is signed too). The challenge names its form, expires after
FORMSAPI_CHALLENGE_MINUTES, and each is spent by the first post that
carries it: its nonce is kept until it expires, in Redis when configured
(shared by every process), else in the database.
"""

import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import altcha
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.db.session import purge_in_batches, session_scope
from formsapi.kit.breaker import Open
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import utcnow
from formsapi.spam import repository
from formsapi.spam.service import Reason

log = logging.getLogger("formsapi")

ALGORITHM = "SHA-256"
FIELD = "altcha"  # the posted field the widget fills with its solution
MAX_PAYLOAD = 4096  # characters: a solution is some 700
_REDIS_ERRORS = (OSError, Open, TimeoutError)


@dataclass(frozen=True, slots=True)
class Challenges:
    """Makes and checks the challenges of forms that ask for one."""

    settings: Settings
    secret_box: SecretBox | None
    sessionmaker: async_sessionmaker[AsyncSession]
    redis: RedisPipe | None = None

    @property
    def available(self) -> bool:
        """Whether challenges can be made: they need the service's secret,
        the same on every process (unset on PostgreSQL: no challenge)."""
        return self.secret_box is not None

    def _secrets(self) -> tuple[str, str]:
        assert self.secret_box is not None
        return (
            self.secret_box.sign(b"formsapi altcha challenge"),
            self.secret_box.sign(b"formsapi altcha derived key"),
        )

    def new(self, form_id: str) -> dict[str, Any]:
        """A challenge for one post to `form_id`, as the widget fetches it."""
        challenge_key, derived_key = self._secrets()
        cost = self.settings.challenge_cost
        expires = utcnow() + timedelta(minutes=self.settings.challenge_minutes)
        made = altcha.create_challenge(
            ALGORITHM,
            1,
            # The answer itself, drawn from cost/2 to 3 cost/2: the search from
            # zero takes `cost` hashes on average, and no luck shortens it.
            counter=cost // 2 + secrets.randbelow(cost + 1),
            expires_at=int(expires.timestamp()),
            data={"form": form_id},
            hmac_secret=challenge_key,
            hmac_key_secret=derived_key,
        )
        return made.to_dict()

    async def check(self, form_id: str, payload: object) -> Reason | None:
        """Why a post's solution (`payload`, the widget's field) is refused,
        or None when it is sound, for this form, in time, and not spent
        before: it is spent now."""
        if not isinstance(payload, str) or not payload:
            return Reason.challenge_missing
        if not self.available or len(payload) > MAX_PAYLOAD:
            return Reason.challenge_invalid
        challenge_key, derived_key = self._secrets()
        try:
            result = altcha.verify_solution(payload, challenge_key, hmac_key_secret=derived_key)
            parsed = altcha.Payload.from_base64(payload) if result.verified else None
        except Exception:  # a payload of any shape decoded by the library: never a 500
            return Reason.challenge_invalid
        if parsed is None:
            return Reason.challenge_expired if result.expired else Reason.challenge_invalid
        parameters = parsed.challenge.parameters
        if parameters.data != {"form": form_id} or not isinstance(parameters.expires_at, int):
            return Reason.challenge_invalid
        # Signed, so ours; the expiry read on the service's clock too.
        expires_at = datetime.fromtimestamp(parameters.expires_at, UTC)
        if expires_at <= utcnow():
            return Reason.challenge_expired
        spent = await self._spend(parameters.nonce, expires_at)
        return None if spent else Reason.challenge_replayed

    async def _spend(self, nonce: str, expires_at: datetime) -> bool:
        """Mark the challenge spent until it expires: False when it was already."""
        if self.redis is not None:
            key = f"{self.settings.redis_prefix}:altcha:{nonce}"
            # Kept a minute past the expiry: clocks of processes differ a little.
            lives = int((expires_at - utcnow()).total_seconds() * 1000) + 60_000
            try:
                [reply] = await self.redis.execute(("SET", key, "1", "NX", "PX", lives))
            except _REDIS_ERRORS as error:
                log.warning("challenge store unavailable (%s): using the database", error)
            else:
                return reply is not None
        async with session_scope(self.sessionmaker) as session:
            return await repository.spend(session, nonce, expires_at)


async def purge_spent(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Forget the spent challenges that have expired (the database's; Redis
    expires its own)."""
    return await purge_in_batches(sessionmaker, repository.purge_spent, utcnow())
