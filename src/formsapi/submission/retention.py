"""How long the change feed remembers deletes, and how long a form keeps
its submissions: tombstones older than FORMSAPI_TOMBSTONE_DAYS are purged,
and submissions older than their form's `retentionDays` deleted, a batch
per transaction, by the sweeps each serving process runs (kit/sweeps.py)."""

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import WriteSession, purge_in_batches, session_scope
from formsapi.errors import FormNotFound
from formsapi.form import repository as form_repository
from formsapi.kit.time import utcnow
from formsapi.submission import repository, service

# Submissions one transaction deletes: the form's writers wait for each
# batch, so a long backlog is worked through in short turns.
EXPIRED_BATCH = 200


async def purge_tombstones(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> int:
    """Purge every tombstone older than `days`; how many went."""
    return await purge_in_batches(
        sessionmaker, repository.purge_tombstones, utcnow() - timedelta(days=days)
    )


async def delete_expired(
    sessionmaker: async_sessionmaker[WriteSession], batch: int = EXPIRED_BATCH
) -> int:
    """Delete every submission older than its form's `retentionDays`, each
    exactly as the API's delete does (a tombstone, an event, its answers out
    of earlier events, its files), `batch` at a time, each batch in a
    transaction of its own; how many went."""
    async with sessionmaker() as session:
        forms = await form_repository.retained(session)
    deleted = 0
    for organization_id, form_id, days in forms:
        if days is None:
            continue  # (the query asked for forms with days)
        before = utcnow() - timedelta(days=days)
        while True:
            try:
                async with session_scope(sessionmaker) as session:
                    ids = await repository.submitted_before(
                        session, organization_id, form_id, before, batch
                    )
                    if ids:
                        deleted += await service.delete_many(session, organization_id, form_id, ids)
            except FormNotFound:
                break  # deleted since it was listed: its submissions went with it
            if len(ids) < batch:
                break
    return deleted
