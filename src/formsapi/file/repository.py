"""The SQL of files. Their bytes are the storages' (file/storage.py)."""

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, Row, and_, case, delete, func, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import File
from formsapi.tenancy import scoped, unscoped


async def add(session: AsyncSession, file: File) -> None:
    session.add(file)
    await session.flush()


# The first key of the advisory locks that order a form's uploads (the
# second is the form's): apart from the single key its posts queue on.
_UPLOADS_LOCK = 0x66696C65  # "file"


async def queue_uploads(session: AsyncSession, form_id: str) -> None:
    """Wait for the form's turn to take an upload, until commit (PostgreSQL;
    a SQLite write transaction already excludes every other writer), so
    that what its uploads hold is read and added to by one at a time."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(
            select(func.pg_advisory_xact_lock(literal(_UPLOADS_LOCK), func.hashtext(form_id)))
        )


async def unclaimed(
    session: AsyncSession, organization_id: str, form_id: str, now: datetime
) -> tuple[int, datetime | None]:
    """The bytes a form's uploads that no submission has taken hold (those
    still arriving by what they may reach), and when the first of them
    expires: (held, first expiry)."""
    statement = select(
        func.coalesce(func.sum(File.size), 0).label("held"),
        func.min(File.expires_at).label("first_expiry"),
    ).where(
        scoped(File, organization_id),
        File.form_id == form_id,
        File.submission_id.is_(None),
        File.expires_at > now,
    )
    held, first_expiry = (await session.execute(statement)).one()
    return int(held), first_expiry  # PostgreSQL sums a bigint as a numeric


async def stored(
    session: AsyncSession,
    organization_id: str,
    file_id: str,
    content_type: str,
    size: int,
    sha256: bytes,
    now: datetime,
) -> None:
    """The upload is complete: the file can be named by answers from now."""
    await session.execute(
        update(File)
        .where(scoped(File, organization_id), File.id == file_id)
        .values(content_type=content_type, size=size, sha256=sha256, stored_at=now)
        .execution_options(synchronize_session=False)
    )


async def remove(session: AsyncSession, organization_id: str, file_id: str) -> None:
    await session.execute(delete(File).where(scoped(File, organization_id), File.id == file_id))


async def due_now(session: AsyncSession, organization_id: str, file_id: str, now: datetime) -> None:
    """An upload cut short whose bytes could not be deleted: the purge's, now."""
    await session.execute(
        update(File)
        .where(scoped(File, organization_id), File.id == file_id, File.submission_id.is_(None))
        .values(expires_at=now)
        .execution_options(synchronize_session=False)
    )


def _readable(now: datetime) -> list[ColumnElement[bool]]:
    # Complete, and not due for the purge (its bytes may still be there until
    # the purge runs, an object store's always are, but no one reads them).
    return [File.stored_at.is_not(None), ~and_(*_due(now))]


async def get(
    session: AsyncSession, organization_id: str, file_id: str, now: datetime
) -> File | None:
    """A readable file of the organization."""
    found: File | None = await session.scalar(
        select(File).where(scoped(File, organization_id), File.id == file_id, *_readable(now))
    )
    return found


async def by_id(session: AsyncSession, file_id: str, now: datetime) -> File | None:
    """A readable file by its id alone: for a signed link, whose signature
    (checked first) names the file."""
    statement = select(File).where(File.id == file_id, *_readable(now))
    found: File | None = await session.scalar(unscoped(statement, "a signed link names the file"))
    return found


async def of_form(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    file_ids: Sequence[str],
    now: datetime,
) -> Sequence[File]:
    """Readable files of one form among `file_ids`, taken or not."""
    found = await session.scalars(
        select(File).where(
            scoped(File, organization_id),
            File.form_id == form_id,
            File.id.in_(file_ids),
            *_readable(now),
        )
    )
    return found.all()


async def attach(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    owners: dict[str, str],
    now: datetime,
) -> dict[str, str]:
    """Give each file of `owners` (file id: submission id) to its submission,
    if it is a complete upload to this form that no submission has taken
    and has not expired; the question each one taken was uploaded to."""
    statement = (
        update(File)
        .where(
            scoped(File, organization_id),
            File.form_id == form_id,
            File.id.in_(owners),
            File.submission_id.is_(None),
            File.stored_at.is_not(None),
            File.expires_at > now,
        )
        .values(submission_id=case(owners, value=File.id), expires_at=None)
        .returning(File.id, File.question)
        .execution_options(synchronize_session=False)
    )
    return {row.id: row.question for row in await session.execute(statement)}


async def keep_until(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    file_ids: Sequence[str],
    until: datetime,
) -> None:
    """Keep uploads no submission has taken yet until at least `until` (a
    partial response naming them is kept that long)."""
    await session.execute(
        update(File)
        .where(
            scoped(File, organization_id),
            File.form_id == form_id,
            File.id.in_(file_ids),
            File.submission_id.is_(None),
            File.expires_at < until,
        )
        .values(expires_at=until)
        .execution_options(synchronize_session=False)
    )


async def release(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    submission_ids: Sequence[str],
    file_ids: Sequence[str] = (),
    now: datetime | None = None,
) -> None:
    """Delete the files of these submissions (or only `file_ids` of them)."""
    of_them: list[ColumnElement[bool]] = [File.submission_id.in_(submission_ids)]
    if file_ids:
        of_them.append(File.id.in_(file_ids))
    await _let_go(session, organization_id, form_id, of_them, now)


async def drop_unclaimed(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    file_ids: Sequence[str],
    now: datetime,
) -> None:
    """Delete the uploads among `file_ids` that no submission took."""
    of_them = [File.id.in_(file_ids), File.submission_id.is_(None)]
    await _let_go(session, organization_id, form_id, of_them, now)


async def _let_go(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    of_them: Sequence[ColumnElement[bool]],
    now: datetime | None,
) -> None:
    """Delete a form's files: those in the database at once, with their
    chunks; those elsewhere are left to the purge (no submission, due now),
    which deletes the bytes before the row."""
    found = [scoped(File, organization_id), File.form_id == form_id, *of_them]
    await session.execute(delete(File).where(*found, File.storage == "database"))
    await session.execute(
        update(File)
        .where(*found)
        .values(submission_id=None, expires_at=now)
        .execution_options(synchronize_session=False)
    )


def _due(before: datetime) -> list[ColumnElement[bool]]:
    # No submission, and either expired or left behind by a deleted one
    # (a cascade cleared its submission and left no expiry).
    return [
        File.submission_id.is_(None),
        or_(File.expires_at.is_(None), File.expires_at < before),
    ]


async def due(session: AsyncSession, before: datetime, batch: int) -> Sequence[Row[str, str]]:
    """Files to purge, across organizations: (id, storage)."""
    statement = select(File.id, File.storage).where(*_due(before)).limit(batch)
    found = await session.execute(unscoped(statement, "the purge of every organization's files"))
    return found.all()


async def purge(session: AsyncSession, file_ids: Sequence[str], before: datetime) -> int:
    """Delete the rows (and chunks) of these files, still due."""
    statement = delete(File).where(File.id.in_(file_ids), *_due(before))
    connection = await session.connection()
    result = await connection.execute(
        unscoped(statement, "the purge of every organization's files")
    )
    return int(result.rowcount)
