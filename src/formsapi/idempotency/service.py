"""Idempotency-Key for POSTs: a retry with the same key and body gets the first
response and creates nothing new; the same key with another body is refused.

The key is claimed before the work, in the work's own transaction: a duplicate
arriving meanwhile waits on the claim's unique key, then replays what the first
request committed. Errors roll the claim back with everything else, so a failed
request can be retried with its key.
"""

import hashlib
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import Conflict, FormsAPIError
from formsapi.kit.time import utcnow
from formsapi.models import IdempotencyKey

RETENTION = timedelta(hours=24)


class IdempotencyKeyReused(FormsAPIError):
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


async def _stored(
    session: AsyncSession, organization_id: str, key: str, print_: str
) -> Outcome | None:
    row = await session.scalar(
        select(IdempotencyKey).where(
            IdempotencyKey.organization_id == organization_id,
            IdempotencyKey.key == key,
            IdempotencyKey.created_at >= utcnow() - RETENTION,
        )
    )
    if row is None:
        return None
    if row.fingerprint != print_:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was used for a different request; use a new key."
        )
    return Outcome(row.status, row.body.encode(), row.location)


async def run_once(
    session: AsyncSession,
    organization_id: str,
    key: str | None,
    print_: str,
    work: Callable[[], Awaitable[Outcome]],
) -> Outcome:
    """Do `work` once per key: the first time, or replay its stored outcome."""
    if key is None:
        return await work()
    stored = await _stored(session, organization_id, key, print_)
    if stored is not None:
        return stored
    try:
        async with session.begin_nested():
            session.add(
                IdempotencyKey(
                    organization_id=organization_id,
                    key=key,
                    fingerprint=print_,
                    status=0,
                    body="",
                    location=None,
                )
            )
    except IntegrityError:
        # Another request with this key committed while we waited on its claim.
        stored = await _stored(session, organization_id, key, print_)
        if stored is None:
            raise Conflict("A request with this Idempotency-Key is in progress.") from None
        return stored
    outcome = await work()
    await session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.organization_id == organization_id, IdempotencyKey.key == key)
        .values(status=outcome.status, body=outcome.body.decode(), location=outcome.location)
    )
    if random.random() < 0.01:  # noqa: S311 - housekeeping, now and then
        await session.execute(
            delete(IdempotencyKey).where(
                IdempotencyKey.organization_id == organization_id,
                IdempotencyKey.created_at < utcnow() - RETENTION,
            )
        )
    return outcome
