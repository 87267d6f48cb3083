"""A key's last use, recorded beside the requests that use it, not in their way."""

import asyncio
import logging
import time
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import async_sessionmaker

from formsapi.api_key import repository
from formsapi.db.session import ReadSession
from formsapi.kit.time import utcnow

log = logging.getLogger("formsapi")

# A key's last use is kept to the minute: a busy key writes once an interval.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOUCH_INTERVAL = 60.0  # seconds between last-use records for one key, per process


class LastUse:
    """Records when keys were last used, each record in a task of its own.

    Bookkeeping never holds a request up: on SQLite the record waits for the
    write lock while another writer holds it, and the request would have
    waited with it (up to the busy timeout, then failed). In its own task and
    its own autocommit session, the record lands whatever the request does
    next (fails, or is cancelled by its client). One record per key runs at
    a time, each gives up after `timeout` seconds, and one that failed is
    tried again by the key's next use.
    """

    def __init__(self, sessionmaker: async_sessionmaker[ReadSession], timeout: float = 5.0) -> None:
        self._sessionmaker = sessionmaker
        self._timeout = timeout
        self._recorded: dict[str, float] = {}  # key id: when its last record started
        self._running: dict[str, asyncio.Task[bool]] = {}
        self._closed = False
        self._max = 10_000

    def used(self, organization_id: str, key_id: str) -> None:
        """`key_id` was used now: record it, in the background, unless it was
        recorded less than an interval ago or its record is under way."""
        now = time.monotonic()
        if self._closed or key_id in self._running:
            return
        if now - self._recorded.get(key_id, -TOUCH_INTERVAL) < TOUCH_INTERVAL:
            return
        if len(self._recorded) > self._max:
            self._recorded.clear()
        self._recorded[key_id] = now
        task = asyncio.create_task(self._record(organization_id, key_id, utcnow()))
        self._running[key_id] = task
        task.add_done_callback(lambda _: self._running.pop(key_id, None))

    async def _record(self, organization_id: str, key_id: str, now: datetime) -> bool:
        try:
            async with asyncio.timeout(self._timeout), self._sessionmaker() as session:
                await repository.touch(
                    session, organization_id, key_id, now, now - LAST_USED_RESOLUTION
                )
        except Exception as error:  # best effort: never a request's failure
            log.debug("the last use of key %s was not recorded: %r", key_id, error)
            self._recorded.pop(key_id, None)
            return False
        return True

    async def close(self) -> None:
        """Start no more records, and let those under way finish (each within
        its timeout): at shutdown, before the engine's connections close."""
        self._closed = True
        running = list(self._running.values())
        if running:
            await asyncio.gather(*running, return_exceptions=True)
