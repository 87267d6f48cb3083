"""Per-worker cache of key lookups, trusted only under the current auth epoch."""

import time
from collections import OrderedDict
from dataclasses import dataclass

from formsapi.api_key.epoch import AuthEpoch
from formsapi.api_key.principal import Principal


@dataclass(slots=True)
class _Entry:
    principal: Principal
    epoch: bytes | str
    loaded_at: float


class PrincipalCache:
    # A backstop, not the mechanism: the epoch invalidates at once; this bounds
    # what a change made behind the service's back (raw SQL, a CLI run without
    # FORMSAPI_REDIS_URL, Redis down at the moment of a revocation) can outlive.
    TTL = 60.0

    def __init__(self, epoch: AuthEpoch, max_entries: int = 10_000) -> None:
        self.epoch = epoch
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._max = max_entries

    async def current_epoch(self) -> bytes | str | None:
        """None means: do not use the cache (no shared epoch to trust)."""
        epoch = await self.epoch.current()
        if epoch is None:
            self._entries.clear()  # what was cached may have been revoked meanwhile
        return epoch

    def plan_of(self, secret_hash: str) -> str | None:
        """The plan of a key this worker has seen, whether or not its entry is
        still current: the limit to count a request against before the epoch
        is read, in the same round trip."""
        entry = self._entries.get(secret_hash)
        return entry.principal.plan if entry is not None else None

    def get(self, secret_hash: str, epoch: bytes | str | None) -> Principal | None:
        if epoch is None:
            return None
        entry = self._entries.get(secret_hash)
        if entry is None:
            return None
        if entry.epoch != epoch or time.monotonic() - entry.loaded_at > self.TTL:
            # Dropped, not kept: plan_of must not go on answering for a key
            # that may since have been revoked.
            del self._entries[secret_hash]
            return None
        self._entries.move_to_end(secret_hash)
        return entry.principal

    def put(self, secret_hash: str, principal: Principal, epoch: bytes | str | None) -> None:
        if epoch is None:
            return
        self._entries[secret_hash] = _Entry(principal, epoch, time.monotonic())
        self._entries.move_to_end(secret_hash)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
