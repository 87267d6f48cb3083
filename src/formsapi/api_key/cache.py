"""Per-worker cache of key lookups, trusted only under the current auth epoch."""

import time
from collections import OrderedDict
from dataclasses import dataclass

from formsapi.api_key.epoch import AuthEpoch
from formsapi.api_key.principal import Principal

TOUCH_INTERVAL = 60.0  # seconds between last-used writes for one key, per worker


@dataclass(slots=True)
class _Entry:
    principal: Principal
    epoch: int


class PrincipalCache:
    def __init__(self, epoch: AuthEpoch, max_entries: int = 10_000) -> None:
        self.epoch = epoch
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._max = max_entries
        self._touched: dict[str, float] = {}

    async def current_epoch(self) -> int | None:
        """None means: do not cache (no shared epoch to invalidate with)."""
        return await self.epoch.current()

    def get(self, secret_hash: str, epoch: int | None) -> Principal | None:
        if epoch is None:
            return None
        entry = self._entries.get(secret_hash)
        if entry is None or entry.epoch != epoch:
            return None
        self._entries.move_to_end(secret_hash)
        return entry.principal

    def due_for_touch(self, key_id: str) -> bool:
        """True at most once per interval per key, so last-used costs few writes."""
        now = time.monotonic()
        if now - self._touched.get(key_id, -TOUCH_INTERVAL) < TOUCH_INTERVAL:
            return False
        if len(self._touched) > self._max:
            self._touched.clear()
        self._touched[key_id] = now
        return True

    def put(self, secret_hash: str, principal: Principal, epoch: int | None) -> None:
        if epoch is None:
            return
        self._entries[secret_hash] = _Entry(principal, epoch)
        self._entries.move_to_end(secret_hash)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
