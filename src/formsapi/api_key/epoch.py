"""The auth epoch: a counter in Redis that moves whenever a key's validity may
have changed (revocation, a member's role changing or ending).

Workers cache key lookups only while the epoch they were loaded under is still
current, so a revocation through any process is refused by every other process
on its very next request. Services only mark the transaction; the commit
boundary bumps the epoch after the commit, so a reload never sees old rows
under the new epoch.
"""

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

_CHANGED = "formsapi.keys_changed"


def mark_keys_changed(session: AsyncSession) -> None:
    session.info[_CHANGED] = True


class AuthEpoch:
    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self._redis: Redis | None = Redis.from_url(redis_url) if redis_url else None
        self._key = f"{prefix}:auth-epoch"

    @property
    def enabled(self) -> bool:
        return self._redis is not None

    async def current(self) -> int | None:
        if self._redis is None:
            return None
        value = await self._redis.get(self._key)
        return int(value or 0)

    async def bump(self) -> None:
        if self._redis is not None:
            await self._redis.incr(self._key)

    async def after_commit(self, session: AsyncSession) -> None:
        if session.info.pop(_CHANGED, False):
            await self.bump()

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
