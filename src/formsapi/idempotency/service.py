"""Idempotency-Key for POSTs: a retry with the same key and body gets the first
response and creates nothing new; the same key with another body is refused.

The key is claimed before the work, in the work's own transaction: a duplicate
arriving meanwhile waits on the claim's unique key, then replays what the first
request committed. A key past its retention is reclaimed by the claim itself.
Errors roll the claim back with everything else, so a failed request can be
retried with its key.
"""

import hashlib
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import Conflict, FormsAPIError
from formsapi.idempotency import repository
from formsapi.kit.time import utcnow

RETENTION = timedelta(hours=24)


class IdempotencyKeyReused(FormsAPIError):
    """This Idempotency-Key was used in the last 24 hours for a different
    request (another path or body). A key stands for one request: use a new
    key for a new one."""

    status = 422
    title = "Idempotency-Key reused"
    slug = "idempotency-key-reused"


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int
    body: bytes
    location: str | None = None


def fingerprint(method: str, path: str, body: Any) -> str:
    """Same request, same fingerprint: key order and whitespace do not count."""
    # The standard library's encoder: it takes any int, any depth pydantic let
    # through and unpaired surrogates, where orjson would raise.
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    text = f"{method} {path}\n{canonical}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


async def kept(
    session: AsyncSession, organization_id: str, key: str, print_: str, now: datetime
) -> Outcome | None:
    """The outcome kept for this key, None if there is none (or it expired);
    refused if the key was used for another request."""
    row = await repository.get_live(session, organization_id, key, now - RETENTION)
    if row is None:
        return None
    if row.fingerprint != print_:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was used for a different request; use a new key."
        )
    if row.status == 0:  # claimed by a transaction that has not finished (a guard)
        raise Conflict("A request with this Idempotency-Key is in progress.")
    return Outcome(row.status, row.body.encode(), row.location)


async def run_once(
    session: AsyncSession,
    organization_id: str,
    key: str | None,
    print_: str,
    work: Callable[[], Awaitable[Outcome]],
) -> Outcome:
    """Do `work` once per key: the first time, or replay its stored outcome.

    A key older than RETENTION is taken over by the claim itself: its old row
    no longer answers for it."""
    if key is None:
        return await work()
    now = utcnow()
    found = await kept(session, organization_id, key, print_, now)
    if found is not None:
        return found
    if not await repository.claim(session, organization_id, key, print_, now, now - RETENTION):
        # Another request with this key committed while we waited on its claim.
        found = await kept(session, organization_id, key, print_, now)
        if found is None:
            raise Conflict("A request with this Idempotency-Key is in progress.")
        return found
    outcome = await work()
    await repository.record(
        session, organization_id, key, outcome.status, outcome.body.decode(), outcome.location
    )
    if random.random() < 0.01:  # noqa: S311 - housekeeping, now and then
        await repository.delete_expired(session, organization_id, now - RETENTION)
    return outcome


async def redact_created(
    session: AsyncSession, organization_id: str, locations: Sequence[str]
) -> None:
    """Empty the answers of the stored first responses that created these
    (now deleted) resources: a retry with the same key still creates
    nothing, and replays no answer that was erased. In the deleting
    transaction."""
    for key, body in await repository.responses_at(session, organization_id, locations):
        try:
            stored = json.loads(body)
        except ValueError:
            continue
        if isinstance(stored, dict) and "answers" in stored:
            stored["answers"] = {}
            await repository.replace_body(session, organization_id, key, json.dumps(stored))
