"""The writers of one SQLite database take turns here, in every process,
instead of in SQLite's busy handler.

A writer that finds the write lock taken sleeps in SQLite's busy handler for
1, 2, 5, 10, ... up to 100 ms at a time, and checks again only then. With
two processes writing, one process's writer took the lock back again and
again while the other's slept, and the posts waiting on the sleeper got
p99s of a second (bench/RESULTS.md). Here the writers of a process queue on
an asyncio lock, in turn, and the one at its head waits for the other
processes on a lock file beside the database (flock), woken by the kernel
as soon as it is free: SQLite's lock is then found free.
"""

import asyncio
import fcntl
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


class GateTimeout(TimeoutError):
    """The gate stayed taken for the whole wait."""


class WriteGate:
    def __init__(self, database: Path, timeout: float) -> None:
        self._path = Path(f"{database}-writers")
        self._timeout = timeout
        self._descriptor = -1
        self._turn: asyncio.Lock | None = None
        # One thread: only the head of this process's queue waits on the file.
        self._waiter = ThreadPoolExecutor(1, thread_name_prefix="sqlite-write-gate")
        self._pending: asyncio.Future[None] | None = None

    async def enter(self) -> None:
        """Wait for this writer's turn (GateTimeout after the timeout)."""
        loop = asyncio.get_running_loop()
        if self._turn is None:
            self._turn = asyncio.Lock()
            self._descriptor = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = loop.time() + self._timeout
        try:
            await asyncio.wait_for(self._turn.acquire(), self._timeout)
        except TimeoutError:
            raise GateTimeout from None
        if self._pending is None:
            self._pending = loop.run_in_executor(
                self._waiter, fcntl.flock, self._descriptor, fcntl.LOCK_EX
            )
        pending = self._pending
        try:
            await asyncio.wait_for(asyncio.shield(pending), max(deadline - loop.time(), 0))
        except TimeoutError:
            # The file is still being waited for: whoever holds this process's
            # turn lets it go as soon as it is had.
            pending.add_done_callback(lambda _: self.leave())
            raise GateTimeout from None
        self._pending = None

    def leave(self) -> None:
        """After the writer's COMMIT or ROLLBACK."""
        assert self._turn is not None, "entered first"
        self._pending = None
        fcntl.flock(self._descriptor, fcntl.LOCK_UN)
        self._turn.release()
