"""Housekeeping each serving process runs now and then: retention sweeps."""

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger("formsapi")

# A sweep does its work and says how many rows it removed.
Sweep = Callable[[], Awaitable[int]]


async def keep_sweeping(sweeps: Mapping[str, Sweep], every: float = 3600.0) -> None:
    """Run each sweep every `every` seconds for as long as the process serves.
    A failure (the database away for a moment) waits for the next round;
    several processes sweeping at once only find less to do."""
    # Processes started together do not all sweep at once.
    await asyncio.sleep(random.uniform(0, 60))  # noqa: S311 - spreading load, not a secret
    while True:
        for name, sweep in sweeps.items():
            try:
                removed = await sweep()
                if removed:
                    log.info("retention: removed %d %s", removed, name)
            except Exception:
                log.exception("retention: sweeping %s failed; trying again next round", name)
        await asyncio.sleep(every)
