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
cache: every request looks its key up in the database.
"""

import logging
import secrets

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.secret_url import SecretURL

log = logging.getLogger("formsapi")

_CHANGED = "formsapi.keys_changed"


def mark_keys_changed(session: AsyncSession) -> None:
    session.info[_CHANGED] = True


def _new_token() -> str:
    return secrets.token_hex(8)


class AuthEpoch:
    def __init__(self, redis_url: SecretURL | None, prefix: str) -> None:
        self._redis: Redis | None = (
            Redis.from_url(redis_url.get_secret_value()) if redis_url else None
        )
        self.key = f"{prefix}:auth-epoch"  # read by the rate limiter in its round trip

    async def current(self) -> bytes | str | None:
        """The current token; None when there is no shared epoch to trust."""
        if self._redis is None:
            return None
        try:
            token: bytes | str | None = await self._redis.get(self.key)
            if token is None:
                await self._redis.set(self.key, _new_token(), nx=True)
                token = await self._redis.get(self.key)
        except (RedisError, OSError) as error:
            log.warning("auth epoch unavailable (%s): looking keys up in the database", error)
            return None
        return token

    async def bump(self) -> None:
        if self._redis is None:
            return
        try:
            await self._redis.set(self.key, _new_token())
        except (RedisError, OSError) as error:
            # The change is committed; cached lookups elsewhere expire within
            # PrincipalCache.TTL, and workers that notice the outage drop theirs.
            log.error("could not publish a key change to the auth epoch: %s", error)

    async def after_commit(self, session: AsyncSession) -> None:
        if session.info.pop(_CHANGED, False):
            await self.bump()

    async def ping(self) -> bool | None:
        """None without Redis; else whether it answers."""
        if self._redis is None:
            return None
        try:
            return bool(await self._redis.ping())
        except (RedisError, OSError):
            return False

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
