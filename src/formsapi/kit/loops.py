"""The loops a process runs beside its work (sweeps, flushing counts,
warming summaries, delivering webhooks, sending mail), started and stopped
in one place: each is added by name, all start together, and all stop
together, those that finish their work in hand given the stop to see."""

import asyncio
import logging
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

log = logging.getLogger("formsapi")

# A loop that ends once `stop` is set, after finishing what it holds.
Stoppable = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
# A loop that runs until it is cancelled (it holds nothing to finish).
Endless = Callable[[], Coroutine[Any, Any, None]]


class Background:
    def __init__(self) -> None:
        self._loops: list[tuple[str, Stoppable]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()

    def add(self, name: str, loop: Stoppable) -> None:
        """A loop that stops by itself once asked (its own grace included)."""
        self._loops.append((name, loop))

    def add_endless(self, name: str, loop: Endless) -> None:
        """A loop that is cancelled when the others are asked to stop."""
        self._loops.append((name, lambda stop: _until(stop, loop)))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._loops]

    def start(self) -> None:
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(loop(self._stop), name=f"formsapi {name}")
            for name, loop in self._loops
        ]

    async def stop(self) -> None:
        """Ask every loop to stop and wait for each: a loop that failed is
        logged, not raised, so the others still stop."""
        self._stop.set()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("%s failed", task.get_name())
        self._tasks = []


async def _until(stop: asyncio.Event, loop: Endless) -> None:
    running = asyncio.create_task(loop())
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([running, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (running, stopped):
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
