"""The auth epoch: a token in Redis that changes whenever a key's validity may
have changed (revocation, a member's role changing or ending).

Workers cache key lookups only while the token they were loaded under is still
current, so a revocation through any process is refused by every other process
on its very next request. Services only mark the transaction; the commit
boundary replaces the token after the commit, so a reload never sees old rows
under the new token.

A random token rather than a counter: if Redis loses it (a restart without
persistence, an eviction) a fresh one is drawn, which matches no cached entry,
where a counter could start again at a number old entries still carry. When
Redis cannot be reached the epoch is unknown and nothing is served from the
cache: every request looks its key up in the database. Every call goes through
the process's shared Redis connection, with its timeout and circuit breaker.
"""

import logging
import secrets

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.breaker import Open
from formsapi.kit.redis_pipe import RedisPipe

log = logging.getLogger("formsapi")

_CHANGED = "formsapi.keys_changed"


def mark_keys_changed(session: AsyncSession) -> None:
    session.info[_CHANGED] = True


def _new_token() -> str:
    return secrets.token_hex(8)


class AuthEpoch:
    def __init__(self, pipe: RedisPipe | None, prefix: str) -> None:
        self._pipe = pipe
        self.key = f"{prefix}:auth-epoch"  # read by the rate limiter in its round trip

    async def current(self) -> bytes | str | None:
        """The current token; None when there is no shared epoch to trust."""
        if self._pipe is None:
            return None
        try:
            [token] = await self._pipe.execute(("GET", self.key))
            if token is None:
                _, token = await self._pipe.execute(
                    ("SET", self.key, _new_token(), "NX"), ("GET", self.key)
                )
        except (RedisError, OSError) as error:
            if not isinstance(error, Open):  # an open breaker was reported when it opened
                log.warning("auth epoch unavailable (%s): looking keys up in the database", error)
            return None
        token_: bytes | str | None = token
        return token_

    async def bump(self) -> None:
        if self._pipe is None:
            return
        try:
            await self._pipe.execute(("SET", self.key, _new_token()))
        except (RedisError, OSError) as error:
            # The change is committed; cached lookups elsewhere expire within
            # PrincipalCache.TTL, and workers that notice the outage drop theirs.
            log.error("could not publish a key change to the auth epoch: %s", error)

    async def after_commit(self, session: AsyncSession) -> None:
        if session.info.pop(_CHANGED, False):
            await self.bump()

    async def ping(self) -> bool | None:
        """None without Redis; else whether it answers (False at once while the
        circuit breaker is open)."""
        if self._pipe is None:
            return None
        try:
            return await self._pipe.execute(("PING",)) == [b"PONG"]
        except (RedisError, OSError):
            return False
