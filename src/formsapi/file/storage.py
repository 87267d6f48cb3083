"""Where an upload's bytes go: the database, in chunks (the default, on both
engines), or an S3-compatible object store (FORMSAPI_UPLOAD_STORAGE=s3).

Both take a file a piece at a time and give it back a piece at a time, so
what a process holds for one file is one piece (the store's part size), not
the file. Each file row names its storage, so changing the setting leaves
earlier files readable where they are.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from functools import cached_property
from typing import Any, Protocol

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import async_sessionmaker

from formsapi.config import Settings
from formsapi.db.session import ReadSession, WriteSession, session_scope
from formsapi.models import FileChunk

# Bytes a database chunk holds: large enough that a file is few rows, small
# enough that a chunk in flight is nothing to a process.
CHUNK = 512 * 1024


class BytesMissing(Exception):
    """A file row whose bytes its storage does not have (deleted behind the
    service's back, or a store restored from an older copy)."""


class StoreFailed(Exception):
    """An object store that could not be reached, or that refused a request
    (credentials, permissions, an operation it does not implement): what it
    said, in one line, as `code` and the message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Writer(Protocol):
    async def write(self, piece: bytes) -> None: ...

    async def finish(self) -> None: ...

    async def abort(self) -> None: ...


class Storage(Protocol):
    name: str

    def writer(self, file_id: str) -> Writer: ...

    def read(self, file_id: str) -> AsyncIterator[bytes]: ...

    async def delete(self, file_ids: list[str]) -> None: ...


class DatabaseStorage:
    """Chunks in `file_chunks`, each written in a transaction of its own: a
    slow upload never holds a transaction (nor SQLite's write lock) while
    it waits for the network. Chunks of a file that never completes are
    deleted with its row (cascade)."""

    name = "database"

    def __init__(
        self,
        sessionmaker: async_sessionmaker[WriteSession],
        read_sessionmaker: async_sessionmaker[ReadSession],
    ) -> None:
        self._sessionmaker = sessionmaker
        self._read_sessionmaker = read_sessionmaker

    def writer(self, file_id: str) -> Writer:
        return _DatabaseWriter(self._sessionmaker, file_id)

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        """BytesMissing before the first piece if there is none."""
        seq = 0
        while True:
            async with self._read_sessionmaker() as session:
                piece = await session.scalar(
                    select(FileChunk.data).where(FileChunk.file_id == file_id, FileChunk.seq == seq)
                )
            if piece is None:
                if seq == 0:
                    raise BytesMissing(file_id)
                return
            yield piece
            seq += 1

    async def delete(self, file_ids: list[str]) -> None:
        """Nothing beyond the rows: their chunks go with them."""


class _DatabaseWriter:
    def __init__(self, sessionmaker: async_sessionmaker[WriteSession], file_id: str) -> None:
        self._sessionmaker = sessionmaker
        self._file_id = file_id
        self._seq = 0
        self._pending = bytearray()

    async def write(self, piece: bytes) -> None:
        self._pending += piece
        while len(self._pending) >= CHUNK:
            await self._store(bytes(self._pending[:CHUNK]))
            del self._pending[:CHUNK]

    async def finish(self) -> None:
        if self._pending:
            await self._store(bytes(self._pending))
            self._pending.clear()

    async def abort(self) -> None:
        self._pending.clear()
        async with session_scope(self._sessionmaker) as session:
            await session.execute(delete(FileChunk).where(FileChunk.file_id == self._file_id))

    async def _store(self, data: bytes) -> None:
        async with session_scope(self._sessionmaker) as session:
            await session.execute(
                insert(FileChunk).values(file_id=self._file_id, seq=self._seq, data=data)
            )
        self._seq += 1


# S3 takes a multipart upload's parts at 5 MiB or more (but the last).
PART = 8 * 1024 * 1024
# Keys one DeleteObjects call takes at most.
_DELETE_BATCH = 1000


class S3Storage:
    """Objects named `<prefix><file id>` in one bucket. boto3 is blocking:
    every call runs in a thread, so the event loop never waits on the store.
    Credentials come the way boto3 finds them (AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, a profile, an instance role)."""

    name = "s3"

    def __init__(self, settings: Settings) -> None:
        if not settings.s3_bucket:
            raise ValueError("FORMSAPI_S3_BUCKET must be set to store uploads in S3")
        self.bucket = settings.s3_bucket
        self.prefix = settings.s3_prefix
        self._endpoint_url = settings.s3_endpoint_url
        self._region = settings.s3_region

    @cached_property
    def client(self) -> Any:
        """The store's client; StoreFailed when one cannot be made (no
        region, a profile that is not there): as any failure of the store."""
        import boto3  # only a deployment that stores in S3 pays for the import
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        try:
            return boto3.client(
                "s3",
                endpoint_url=self._endpoint_url,
                region_name=self._region,
                config=Config(retries={"mode": "standard", "max_attempts": 5}),
            )
        except (BotoCoreError, ValueError) as error:
            raise StoreFailed(type(error).__name__, str(error)) from error

    def key(self, file_id: str) -> str:
        return self.prefix + file_id

    def writer(self, file_id: str) -> Writer:
        return _S3Writer(self, self.key(file_id))

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        """BytesMissing before the first piece if the object is not there."""
        try:
            answer = await _call(self.client.get_object, Bucket=self.bucket, Key=self.key(file_id))
        except StoreFailed as error:
            if error.code in ("NoSuchKey", "404"):
                raise BytesMissing(file_id) from None
            raise
        body = answer["Body"]
        try:
            while piece := await _call(body.read, CHUNK):
                yield piece
        finally:
            body.close()

    async def delete(self, file_ids: list[str]) -> None:
        """The objects, and the multipart uploads of theirs never completed:
        a process that died mid-upload left one, whose parts the store
        keeps (and bills) until it is aborted, unseen by an object listing."""
        for start in range(0, len(file_ids), _DELETE_BATCH):
            keys = [{"Key": self.key(i)} for i in file_ids[start : start + _DELETE_BATCH]]
            answer = await _call(
                self.client.delete_objects,
                Bucket=self.bucket,
                Delete={"Objects": keys, "Quiet": True},
            )
            if answer.get("Errors"):
                raise RuntimeError(f"the object store kept {len(answer['Errors'])} object(s)")
        await _call(self._abort_unfinished, {self.key(i) for i in file_ids})

    def _abort_unfinished(self, keys: set[str]) -> None:
        """One listing of the prefix's unfinished uploads (usually none) per
        call, rather than one request per file."""
        from botocore.exceptions import ClientError

        pages = self.client.get_paginator("list_multipart_uploads")
        for page in pages.paginate(Bucket=self.bucket, Prefix=self.prefix):
            for upload in page.get("Uploads", []):
                if upload["Key"] not in keys:
                    continue
                try:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") != "NoSuchUpload":
                        raise


class _S3Writer:
    """Parts of PART bytes: a file that fits one is put whole at the end,
    a larger one goes as a multipart upload, aborted if the upload fails
    (else the store keeps its parts)."""

    def __init__(self, store: S3Storage, key: str) -> None:
        self._store = store
        self._key = key
        self._pending = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    async def write(self, piece: bytes) -> None:
        self._pending += piece
        while len(self._pending) >= PART:
            await self._part(bytes(self._pending[:PART]))
            del self._pending[:PART]

    async def finish(self) -> None:
        store, client = self._store, self._store.client
        if self._upload_id is None:
            await _call(
                client.put_object, Bucket=store.bucket, Key=self._key, Body=bytes(self._pending)
            )
        else:
            if self._pending:
                await self._part(bytes(self._pending))
            await _call(
                client.complete_multipart_upload,
                Bucket=store.bucket,
                Key=self._key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": self._parts},
            )
        self._pending.clear()

    async def abort(self) -> None:
        self._pending.clear()
        if self._upload_id is not None:
            await _call(
                self._store.client.abort_multipart_upload,
                Bucket=self._store.bucket,
                Key=self._key,
                UploadId=self._upload_id,
            )

    async def _part(self, data: bytes) -> None:
        store, client = self._store, self._store.client
        if self._upload_id is None:
            started = await _call(
                client.create_multipart_upload, Bucket=store.bucket, Key=self._key
            )
            self._upload_id = started["UploadId"]
        number = len(self._parts) + 1
        answer = await _call(
            client.upload_part,
            Bucket=store.bucket,
            Key=self._key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=data,
        )
        self._parts.append({"ETag": answer["ETag"], "PartNumber": number})


async def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`function` (a boto3 call) in a thread; the store's failure as StoreFailed."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return await asyncio.to_thread(function, *args, **kwargs)
    except ClientError as error:
        said = error.response.get("Error", {})
        code = str(
            said.get("Code")
            or error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
        )
        raise StoreFailed(code, str(said.get("Message") or error)) from error
    except BotoCoreError as error:
        raise StoreFailed(type(error).__name__, str(error)) from error


class Storages:
    """The storage new uploads go to, and every storage a file row may name."""

    def __init__(
        self,
        settings: Settings,
        sessionmaker: async_sessionmaker[WriteSession],
        read_sessionmaker: async_sessionmaker[ReadSession],
    ) -> None:
        self._database = DatabaseStorage(sessionmaker, read_sessionmaker)
        self._settings = settings

    @cached_property
    def _s3(self) -> S3Storage:
        return S3Storage(self._settings)

    @property
    def current(self) -> Storage:
        return self._s3 if self._settings.upload_storage == "s3" else self._database

    def of(self, name: str) -> Storage:
        return self._s3 if name == "s3" else self._database
