"""Uploads to file questions: received a piece at a time, typed by their
bytes, kept apart from the answers, given to the submission that names them,
and deleted with it.

An upload is refused on what its request says before a byte of it is read:
the question, its declared length against the question's limit, the
sender's allowances (the hosted page's), and the form's room for uploads no
submission took, which its row, written then, takes its share of. Its first
bytes are then checked against the types the question accepts, and its bytes
go to the storage a piece at a time while they are counted (a body that runs
over is cut at the limit) and hashed. The row is marked complete only at the
end; an upload cut short deletes what it wrote, and one whose process died
is purged with the uploads no submission took.
"""

import codecs
import hashlib
import logging
import math
import re
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import filetype
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.db.session import ReadSession, WriteSession, session_scope
from formsapi.errors import (
    FormsAPIError,
    InvalidParameters,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from formsapi.file import repository
from formsapi.file.storage import BytesMissing, Storages, StoreFailed
from formsapi.form.service import FormNotAccepting
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import blocks, compiled
from formsapi.language.blocks import Block, FileUpload, questions
from formsapi.models import File, Form, FormStatus

log = logging.getLogger("formsapi")

FILE_ID = re.compile(blocks.FILE_ID)
# Bytes read before the type is decided: every signature we know lies
# within them.
SNIFF_BYTES = 8192
NAME_MAX = 255
# The type of bytes that are no known format but read as text.
TEXT = "text/plain"
UNKNOWN = "application/octet-stream"


class EmptyFile(FormsAPIError):
    """The upload has no bytes."""

    status = 422
    title = "Empty file"
    slug = "empty-file"


class FileNotFound(NotFound):
    def __init__(self, file_id: str) -> None:
        super().__init__(f"No file with id '{file_id}'.")


class LinkInvalid(FormsAPIError):
    """A download link that has expired, or was never signed by this service."""

    status = 403
    title = "Link not valid"
    slug = "file-link-invalid"


def sniff(head: bytes) -> str:
    """The type the bytes say they are: a known format by its signature,
    else text when they read as UTF-8 text, else application/octet-stream.
    What the name or the request claimed plays no part."""
    kind = filetype.guess(head)
    if kind is not None:
        return str(kind.mime)
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return UNKNOWN
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r\f" for c in text):
        return UNKNOWN
    return TEXT


def clean_name(raw: str | None) -> str:
    """A file name safe to store and to send back in a header: its last path
    segment, without control or format characters (NUL, bidi overrides),
    NFC, at most NAME_MAX characters, keeping its extension."""
    name = unicodedata.normalize("NFC", raw or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in name if unicodedata.category(c) not in {"Cc", "Cf", "Cs", "Zl", "Zp"})
    name = name.strip().strip(".").strip()
    if not name:
        return "file"
    if len(name) > NAME_MAX:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 16:
            name = stem[: NAME_MAX - len(extension) - 1] + "." + extension
        else:
            name = name[:NAME_MAX]
    return name


def question_of(blocks: list[Block], key: str | None) -> FileUpload:
    """The file question an upload is for."""
    for question in questions(blocks):
        if isinstance(question, FileUpload) and question.key == key:
            return question
    raise InvalidParameters(
        "The upload names no file question of this form.",
        invalidParams=[
            {"name": "question", "in": "query", "reason": "must be the key of a file question"}
        ],
    )


def answered_files(blocks: list[Block], answers: dict[str, Any]) -> dict[str, str]:
    """The files answers name: file id to question key."""
    named: dict[str, str] = {}
    for question in questions(blocks):
        if isinstance(question, FileUpload):
            value = answers.get(question.key)
            if isinstance(value, str) and value:
                named.update((file_id, question.key) for file_id in value.split(","))
    return named


@dataclass(frozen=True, slots=True)
class Upload:
    """One upload's request: for which question, what it says it is called,
    how long it says it is, and the bytes as they arrive."""

    key: str | None
    name: str | None
    length: int | None
    body: AsyncIterator[bytes]


@dataclass(frozen=True, slots=True)
class Limits:
    cap: int  # FORMSAPI_UPLOAD_MAX_BYTES
    keep: timedelta  # until an upload no submission took is purged
    # Bytes the form's uploads no submission took may hold, this one's
    # included (FORMSAPI_UPLOAD_ORPHAN_BYTES_PER_FORM); None: not bounded
    # (an organization's own key).
    unclaimed: int | None = None


# Takes an upload's bytes (at most what it may reach) from the allowances
# of who sends it, or raises to refuse it; before a byte of it is read.
Allowance = Callable[[int], Awaitable[None]]


class UploadsFull(FormsAPIError):
    """The form holds as many bytes of uploads that no submission names yet
    as the service lets it (FORMSAPI_UPLOAD_ORPHAN_BYTES_PER_FORM): nothing
    was read nor kept. Room comes back as answers are sent naming their
    files, and as uploads nobody named expire (FORMSAPI_UPLOAD_ORPHAN_HOURS):
    retry after `Retry-After`, or send the answers without the file."""

    status = 507
    title = "Insufficient Storage"
    slug = "uploads-full"


async def receive(
    sessionmaker: async_sessionmaker[WriteSession],
    storages: Storages,
    form: Form,
    version: compiled.Compiled,
    upload: Upload,
    limits: Limits,
    allowance: Allowance | None = None,
) -> File:
    """Take an upload to a question of a published form to the end, or
    leave nothing of it. What can refuse it without its bytes (the form,
    the question, the declared length, `allowance`, the form's room for
    uploads nobody named) does, before a byte is read. `version`: the
    form's current one."""
    if form.status != FormStatus.published:
        raise FormNotAccepting(
            f"This form is {form.status}; only published forms take uploads.",
            formStatus=form.status,
        )
    question = question_of(version.blocks, upload.key)
    if upload.length == 0:
        raise EmptyFile("The file is empty.")
    limit = min(question.max_size, limits.cap)
    if upload.length is not None:
        if upload.length > limit:
            raise _too_large(limit)
        # A body never runs past what it declared: the allowances took that.
        limit = upload.length
    if limits.unclaimed is not None and limit > limits.unclaimed:
        raise _too_large(limits.unclaimed)  # never room for it
    if allowance is not None:
        await allowance(limit)
    file = await _reserve(sessionmaker, storages, form, question, upload, limits, limit)
    return await _store(sessionmaker, storages, form, question, upload, file, limit)


async def _reserve(
    sessionmaker: async_sessionmaker[WriteSession],
    storages: Storages,
    form: Form,
    question: FileUpload,
    upload: Upload,
    limits: Limits,
    limit: int,
) -> File:
    """The upload's row, not yet complete, holding `limit` bytes (what it
    may reach) of the form's room for uploads no submission took: taken
    under the form's upload lock, so uploads racing for the last of it
    cannot all have it."""
    async with session_scope(sessionmaker) as session:
        if limits.unclaimed is not None:
            await repository.queue_uploads(session, form.id)
        now = utcnow()  # once it is this upload's turn
        if limits.unclaimed is not None:
            held, first_expiry = await repository.unclaimed(
                session, form.organization_id, form.id, now
            )
            if held + limit > limits.unclaimed:
                raise _full(limits, held, first_expiry, now)
        file = File(
            id=new_id("fil"),
            organization_id=form.organization_id,
            form_id=form.id,
            question=question.key,
            name=clean_name(upload.name),
            content_type=UNKNOWN,  # until its first bytes say
            size=limit,
            storage=storages.current.name,
            created_at=now,
            expires_at=now + limits.keep,
        )
        await repository.add(session, file)
    return file


async def _store(
    sessionmaker: async_sessionmaker[WriteSession],
    storages: Storages,
    form: Form,
    question: FileUpload,
    upload: Upload,
    file: File,
    limit: int,
) -> File:
    """The upload's bytes into the storage its row names, typed by their
    first bytes; the row complete at the end, or deleted with what was
    written (left for the purge if the storage cannot delete it now)."""
    writer = storages.of(file.storage).writer(file.id)
    digest = hashlib.sha256()
    size = 0
    try:
        head = bytearray()
        async for piece in upload.body:
            head += piece
            if len(head) >= SNIFF_BYTES:
                break
        if not head:
            raise EmptyFile("The file is empty.")
        content_type = sniff(bytes(head[:SNIFF_BYTES]))
        if not question.accepts(content_type):
            allowed = ", ".join(question.accept or [])
            raise UnsupportedMediaType(
                f"The file's content is {content_type}; this question takes {allowed}.",
                contentType=content_type,
                accept=question.accept,
            )
        async for piece in chained(bytes(head), upload.body):
            size += len(piece)
            if size > limit:
                raise _too_large(limit)
            digest.update(piece)
            await writer.write(piece)
        await writer.finish()
        async with session_scope(sessionmaker) as session:
            await repository.stored(
                session,
                form.organization_id,
                file.id,
                content_type,
                size,
                digest.digest(),
                utcnow(),
            )
    except StoreFailed as error:
        await _forget(sessionmaker, form.organization_id, file.id, writer)
        raise unavailable(file.storage, error) from None
    except BaseException:
        await _forget(sessionmaker, form.organization_id, file.id, writer)
        raise
    file.content_type, file.size, file.sha256 = content_type, size, digest.digest()
    return file


async def chained(head: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """`head`, then the pieces of `rest`."""
    yield head
    async for piece in rest:
        yield piece


async def _forget(
    sessionmaker: async_sessionmaker[WriteSession], organization_id: str, file_id: str, writer: Any
) -> None:
    """Delete an upload cut short: what the storage holds of it, then its
    row. Should the storage fail to delete (an object store gone
    meanwhile), the row stays, due at once, for the purge to delete both;
    should the database fail too, the row stays as it was (never readable:
    not complete), and the purge takes it when it expires."""
    try:
        try:
            await writer.abort()
        except Exception:
            async with session_scope(sessionmaker) as session:
                await repository.due_now(session, organization_id, file_id, utcnow())
            return
        async with session_scope(sessionmaker) as session:
            await repository.remove(session, organization_id, file_id)
    except Exception:  # noqa: S110 - the purge is the fallback, said above
        pass


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The file is over the {limit} bytes this upload takes.", limit=limit)


def _full(limits: Limits, held: int, first_expiry: datetime | None, now: datetime) -> UploadsFull:
    # When the first of them expires (never later than one kept from now).
    until = (first_expiry - now) if first_expiry else limits.keep
    wait = max(1, math.ceil(min(until, limits.keep).total_seconds()))
    room = limits.unclaimed
    return UploadsFull(
        f"This form holds {held} bytes of uploads no answers name yet, of the {room} it "
        "may hold: there is no room for this file now. Try again later.",
        headers={"Retry-After": str(wait)},
        unclaimedLimit=room,
    )


class StorageUnavailable(FormsAPIError):
    """The store the service keeps files in (an S3-compatible one) could not
    be reached, or refused the service's request: nothing was kept of an
    upload, and no file was made. Retry after `Retry-After`; if it goes on,
    tell whoever runs the service (their log says what the store answered)."""

    status = 503
    title = "Storage Unavailable"
    slug = "storage-unavailable"


# Seconds a client is told to wait after the file store failed.
STORAGE_RETRY_AFTER = 5


def unavailable(storage: str, error: StoreFailed) -> StorageUnavailable:
    """The problem for a store that failed, logged in one line (what it
    answered, never a traceback: it is not a fault of the service's)."""
    log.warning("file storage %s unavailable: %s", storage, error)
    return StorageUnavailable(
        "The file store cannot be reached right now; nothing was kept. Retry in a moment.",
        headers={"Retry-After": str(STORAGE_RETRY_AFTER)},
    )


async def get(session: AsyncSession, organization_id: str, file_id: str) -> File:
    """A file of the organization that can be read: complete, and neither
    released by its submission nor expired unclaimed."""
    found = (
        await repository.get(session, organization_id, file_id, utcnow())
        if is_plausible(file_id)
        else None
    )
    if found is None:
        raise FileNotFound(file_id)
    return found


async def by_link(session: ReadSession, file_id: str) -> File:
    """A file a signed link names (the signature checked first)."""
    found = await repository.by_id(session, file_id, utcnow()) if is_plausible(file_id) else None
    if found is None:
        raise FileNotFound(file_id)
    return found


async def named(
    session: AsyncSession, organization_id: str, form_id: str, file_ids: Sequence[str]
) -> Sequence[File]:
    """The complete uploads to a form among `file_ids` (not released nor expired)."""
    plausible = [file_id for file_id in file_ids if is_plausible(file_id)]
    if not plausible:
        return []
    return await repository.of_form(session, organization_id, form_id, plausible, utcnow())


async def content(storages: Storages, file: File) -> AsyncIterator[bytes]:
    """A file's bytes, the first piece read before this returns, so that a
    download can still answer with a problem: FileNotFound for bytes the
    storage has lost (logged: someone deleted them behind the service's
    back), StorageUnavailable for a store that fails."""
    pieces = storages.of(file.storage).read(file.id)
    try:
        first = await anext(pieces)
    except BytesMissing:
        log.error("file %s: its row is here, its bytes are not in %s", file.id, file.storage)
        raise FileNotFound(file.id) from None
    except StoreFailed as error:
        raise unavailable(file.storage, error) from None
    return chained(first, pieces)


def view(file: File) -> dict[str, Any]:
    """A file as the API shows it."""
    return {
        "id": file.id,
        "formId": file.form_id,
        "question": file.question,
        "submissionId": file.submission_id,
        "name": file.name,
        "contentType": file.content_type,
        "size": file.size,
        "sha256": file.sha256.hex() if file.sha256 else None,
        "createdAt": isoformat_z(file.created_at),
        "url": f"/v1/files/{file.id}/content",
    }


# Links


def _signed(file_id: str, expires: int) -> bytes:
    return f"{file_id}.{expires}".encode()


def link(
    box: SecretBox, public_url: str, file_id: str, seconds: int, now: datetime
) -> tuple[str, datetime]:
    """A link anyone holding it can download the file with until it
    expires (whole seconds), and when that is."""
    expires = int(now.timestamp()) + seconds
    signature = box.sign(_signed(file_id, expires))
    url = f"{public_url.rstrip('/')}/files/{file_id}?expires={expires}&signature={signature}"
    return url, datetime.fromtimestamp(expires, UTC)


def check_link(box: SecretBox, file_id: str, expires: str, signature: str, now: datetime) -> None:
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
        raise LinkInvalid("This link is not valid.")
    if int(expires) <= now.timestamp():
        raise LinkInvalid("This link has expired.")
    if not box.verify(_signed(file_id, int(expires)), signature):
        raise LinkInvalid("This link is not valid.")


# Files and the submissions that take them


async def keep_for(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    blocks: list[Block],
    answers: dict[str, Any],
    until: datetime,
) -> None:
    """Uploads a saved partial response names live as long as it does."""
    named = answered_files(blocks, answers)
    if named:
        await repository.keep_until(session, organization_id, form_id, list(named), until)


async def take(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    owners: dict[str, str],
    named: dict[str, str],
) -> list[str]:
    """Give uploads to the submissions that name them (`owners`: file id to
    submission id; `named`: file id to the question answered with it). The
    files that could not be taken: not an upload to that question of this
    form, taken by another submission, or expired. The caller gives up its
    transaction then."""
    taken = await repository.attach(session, organization_id, form_id, owners, utcnow())
    return [f for f in owners if taken.get(f) != named[f]]


async def drop_named(
    session: AsyncSession, organization_id: str, form_id: str, answers: dict[str, Any]
) -> None:
    """Delete the uploads erased answers named that no submission took (a
    partial response's): whatever question they answered, in any version."""
    named = [
        file_id
        for value in answers.values()
        if isinstance(value, str)
        for file_id in value.split(",")
        if FILE_ID.fullmatch(file_id)
    ]
    if named:
        await repository.drop_unclaimed(session, organization_id, form_id, named, utcnow())


async def release(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    submission_ids: Sequence[str],
    file_ids: Iterable[str] = (),
) -> None:
    """Delete the files of deleted submissions (or the ones an edit dropped)."""
    await repository.release(
        session, organization_id, form_id, submission_ids, list(file_ids), utcnow()
    )


async def purge(
    sessionmaker: async_sessionmaker[WriteSession], storages: Storages, batch: int = 500
) -> int:
    """Purge expired uploads and the files of deleted submissions: bytes
    first, then rows, so a purge cut short leaves rows to find again and
    never bytes without a row. How many went."""
    purged = 0
    while True:
        now = utcnow()
        async with sessionmaker() as session:
            rows = await repository.due(session, now, batch)
        for storage in {row.storage for row in rows}:
            await storages.of(storage).delete([row.id for row in rows if row.storage == storage])
        if rows:
            async with session_scope(sessionmaker) as session:
                purged += await repository.purge(session, [row.id for row in rows], now)
        if len(rows) < batch:
            return purged
