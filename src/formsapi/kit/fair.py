"""CPU work taken off the event loop and shared fairly between tenants.

Checking answers against a form's rules and drawing its page are pure
Python: on the loop that serves every organization, one form's heavy post
held back everyone's requests. Here such work runs on one thread of its
own. The loop then waits at most the interpreter's switch interval for
its turn at the GIL, whatever the thread is doing; and the thread takes
tenants in turn (one job each, round robin), so a tenant with many jobs
waiting delays another's next job by one of its own at most.

Each tenant may have work of a bounded cost waiting in each process (in
the units language/cost.py counts); past it, TooMuchWork, and the caller
answers 503 with Retry-After instead of queueing without end.
"""

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class TooMuchWork(Exception):
    """A tenant's work waiting in this process is at its bound."""


@dataclass(slots=True)
class _Job:
    run: Callable[[], Any]
    cost: int
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[Any]


@dataclass(slots=True)
class _Tenant:
    jobs: deque[_Job] = field(default_factory=deque)
    waiting: int = 0  # the cost of its jobs not yet finished


class FairShare:
    """One worker thread, started on first use, taking tenants in turn."""

    def __init__(self, waiting_max: int) -> None:
        self._waiting_max = waiting_max
        self._tenants: dict[str, _Tenant] = {}
        self._turns: deque[str] = deque()  # tenants with jobs, next first
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    async def run(self, tenant: str, cost: int, work: Callable[[], T]) -> T:
        """`work()`'s result, worked out on the thread in `tenant`'s turn.
        TooMuchWork when the tenant's waiting work would pass the bound
        (one job alone always fits)."""
        loop = asyncio.get_running_loop()
        job = _Job(work, cost, loop, loop.create_future())
        with self._ready:
            if self._closed:
                raise RuntimeError("the worker thread is stopped")
            held = self._tenants.get(tenant)
            if held is not None and held.waiting + cost > self._waiting_max:
                raise TooMuchWork
            if held is None:
                held = self._tenants[tenant] = _Tenant()
            if not held.jobs:
                self._turns.append(tenant)
            held.jobs.append(job)
            held.waiting += cost
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="fair-share", daemon=True)
                self._thread.start()
            self._ready.notify()
        # A caller that leaves (its client went away) leaves its job behind:
        # the thread skips it if it has not begun.
        result: T = await job.done
        return result

    def close(self) -> None:
        """Stop the thread once it has finished the job it is on (at shutdown);
        jobs not begun fail, rather than leave their callers waiting."""
        with self._ready:
            self._closed = True
            left = [job for tenant in self._tenants.values() for job in tenant.jobs]
            self._tenants.clear()
            self._turns.clear()
            self._ready.notify_all()
        for job in left:
            _settle(job, error=RuntimeError("the worker thread stopped"))
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _next(self) -> tuple[str, _Job] | None:
        with self._ready:
            while not self._turns and not self._closed:
                self._ready.wait()
            if self._closed:
                return None
            tenant = self._turns.popleft()
            jobs = self._tenants[tenant].jobs
            job = jobs.popleft()
            if jobs:  # back of the line: the others go first
                self._turns.append(tenant)
            return tenant, job

    def _finished(self, tenant: str, job: _Job) -> None:
        with self._ready:
            held = self._tenants.get(tenant)
            if held is None:  # closed meanwhile
                return
            held.waiting -= job.cost
            if not held.jobs and held.waiting <= 0:
                del self._tenants[tenant]

    def _work(self) -> None:
        while (taken := self._next()) is not None:
            tenant, job = taken
            result: Any = None
            error: BaseException | None = None
            if not job.done.cancelled():
                try:
                    result = job.run()
                except BaseException as raised:  # handed to the caller, as the loop would
                    error = raised
            # Its room is given back before its caller hears: a caller that
            # goes on to queue more finds it free.
            self._finished(tenant, job)
            _settle(job, result=result, error=error)


def _settle(job: _Job, *, result: Any = None, error: BaseException | None = None) -> None:
    def settle() -> None:
        if job.done.done():  # cancelled meanwhile
            return
        if error is not None:
            job.done.set_exception(error)
        else:
            job.done.set_result(result)

    with suppress(RuntimeError):  # its loop is closed: nobody waits for it
        job.loop.call_soon_threadsafe(settle)
