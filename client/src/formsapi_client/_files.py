"""Files, for both clients: what an upload reads its bytes from, and what a
download checks its bytes against. Neither ever holds a whole file from a
path or a file object in memory: both go a chunk at a time."""

import asyncio
import hashlib
import io
import os
import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Protocol, cast
from urllib.parse import unquote

import httpx

from formsapi_client.errors import UnreadableResponse

# Bytes read (or written) at a time: the size the service stores a file in.
CHUNK = 512 * 1024


class Readable(Protocol):
    """A binary file object, or anything that reads bytes like one."""

    def read(self, size: int = ..., /) -> bytes: ...


class Writable(Protocol):
    """A binary file object open for writing, or anything that writes bytes like one."""

    def write(self, data: bytes, /) -> object: ...


Seek = Callable[[int, int], int]

# What an upload sends: bytes, a path (str or Path; never the content), or a
# binary file object.
FileSource = bytes | str | os.PathLike[str] | Readable
# Where a download goes: a path (written whole or not at all) or a binary file object.
Destination = str | os.PathLike[str] | Writable

OCTETS = {"Content-Type": "application/octet-stream"}


def _base_name(name: object) -> str | None:
    if isinstance(name, str | os.PathLike):
        return os.path.basename(os.fspath(name)) or None
    return None  # a file object opened on a descriptor has an int for a name


class Upload:
    """An upload's bytes, read from their start on each attempt: bytes as
    they are, a path opened anew, a file object from where it stood when
    given (sought back there for a repeat; one that cannot seek is sent
    once). Its length is sent when known, so that a file over the question's
    limit is refused before its bytes are read."""

    def __init__(self, source: FileSource, name: str | None = None) -> None:
        self._data: bytes | None = None
        self._path: str | None = None
        self._file: Readable | None = None
        self._seek: Seek | None = None  # the file object's, if it can seek
        self._start = 0  # where the file object stood
        self._started = False  # a file object that cannot seek was read from
        if isinstance(source, bytes | bytearray | memoryview):
            self._data = bytes(source)
        elif isinstance(source, str | os.PathLike):
            self._path = os.fspath(source)
            if os.path.isdir(self._path):
                raise IsADirectoryError(f"{self._path!r} is a directory, not a file")
            os.stat(self._path)  # FileNotFoundError now, not once the request is on its way
            name = name or _base_name(self._path)
        elif isinstance(source, io.TextIOBase):
            raise TypeError("an upload's file object must be opened in binary mode ('rb')")
        elif callable(getattr(source, "read", None)):
            self._file = source
            self._seek = _seeker(source)
            if self._seek is not None:
                self._start = self._seek(0, os.SEEK_CUR)
            name = name or _base_name(getattr(source, "name", None))
        else:
            raise TypeError(
                f"an upload's source is bytes, a path or a binary file object, "
                f"not {type(source).__name__}"
            )
        self.name = name

    @property
    def replayable(self) -> bool:
        """Whether another attempt would send the same bytes from their start."""
        return self._file is None or self._seek is not None or not self._started

    def _headers(self, length: int | None) -> dict[str, str]:
        # Without a length, httpx sends the body chunked.
        return OCTETS if length is None else {**OCTETS, "Content-Length": str(length)}

    def _length(self) -> int | None:
        if self._data is not None:
            return len(self._data)
        if self._path is not None:
            return os.stat(self._path).st_size
        if self._seek is None:
            return None
        end = self._seek(0, os.SEEK_END)
        self._seek(self._start, os.SEEK_SET)
        return end - self._start

    def sync_content(self) -> tuple[bytes | Iterator[bytes], dict[str, str]]:
        """This attempt's body and its headers, for httpx.Client."""
        headers = self._headers(self._length())
        if self._data is not None:
            return self._data, headers
        return (self._read_path() if self._path is not None else self._read_file()), headers

    async def async_content(self) -> tuple[bytes | AsyncIterator[bytes], dict[str, str]]:
        """This attempt's body and its headers, for httpx.AsyncClient: each
        read of a file done in a thread, never blocking the event loop."""
        if self._data is not None:
            return self._data, self._headers(len(self._data))
        headers = self._headers(await asyncio.to_thread(self._length))
        if self._path is not None:
            return self._aread_path(self._path), headers
        return self._aread_file(), headers

    def _read_path(self) -> Iterator[bytes]:
        assert self._path is not None
        with open(self._path, "rb") as file:
            while chunk := file.read(CHUNK):
                yield chunk

    def _read_file(self) -> Iterator[bytes]:
        assert self._file is not None
        self._rewind()
        while chunk := _checked(self._file.read(CHUNK)):
            yield chunk

    async def _aread_path(self, path: str) -> AsyncIterator[bytes]:
        file = await asyncio.to_thread(open, path, "rb")
        try:
            while chunk := await asyncio.to_thread(file.read, CHUNK):
                yield chunk
        finally:
            await asyncio.to_thread(file.close)

    async def _aread_file(self) -> AsyncIterator[bytes]:
        assert self._file is not None
        await asyncio.to_thread(self._rewind)
        while chunk := _checked(await asyncio.to_thread(self._file.read, CHUNK)):
            yield chunk

    def _rewind(self) -> None:
        self._started = True
        if self._seek is not None:
            self._seek(self._start, os.SEEK_SET)


def _seeker(file: Readable) -> "Seek | None":
    """A file object's `seek`, if it can seek (a pipe or socket cannot)."""
    seekable, seek = getattr(file, "seekable", None), getattr(file, "seek", None)
    try:
        if callable(seekable) and callable(seek) and seekable():
            return cast(Seek, seek)
    except (OSError, ValueError):
        pass
    return None


def _checked(chunk: bytes | str) -> bytes:
    if isinstance(chunk, str):
        raise TypeError("an upload's file object must be opened in binary mode ('rb')")
    return chunk


def part_path(target: Path) -> Path:
    """A new name beside `target` for a download until it is complete."""
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")


_ETAG = re.compile(r'^"([0-9a-f]{64})"$')


class Received:
    """A download's bytes as they arrive, checked at the end against the
    SHA-256 the service sent as its ETag (and the length it announced, when
    no proxy re-encoded them): a body cut short or altered on its way is
    never taken for the file."""

    def __init__(self, response: httpx.Response) -> None:
        headers = response.headers
        self.url = str(response.url)
        self.content_type: str = headers.get("content-type", "application/octet-stream")
        etag = _ETAG.match(headers.get("etag", ""))
        self.sha256: str | None = etag[1] if etag else None
        length = headers.get("content-length", "")
        encoded = headers.get("content-encoding", "identity") != "identity"
        self.size: int | None = int(length) if length.isdigit() and not encoded else None
        self.name = _disposition_name(headers.get("content-disposition", ""))
        self.received = 0
        self._digest = hashlib.sha256()

    def feed(self, chunk: bytes) -> bytes:
        self.received += len(chunk)
        self._digest.update(chunk)
        return chunk

    def finish(self) -> None:
        """Raise UnreadableResponse unless the bytes are the file's."""
        if self.size is not None and self.received != self.size:
            raise UnreadableResponse(
                f"GET {self.url}: read {self.received} bytes; the file has {self.size}"
            )
        if self.sha256 is not None and self._digest.hexdigest() != self.sha256:
            raise UnreadableResponse(
                f"GET {self.url}: the bytes read are not the file's (SHA-256 differs)"
            )


class Content:
    """A download's file as the answer describes it; the clients' FileContent
    and AsyncFileContent iterate its bytes."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._received = Received(response)

    @property
    def name(self) -> str | None:
        """The file's name (Content-Disposition)."""
        return self._received.name

    @property
    def content_type(self) -> str:
        return self._received.content_type

    @property
    def size(self) -> int | None:
        """Its length in bytes, as announced."""
        return self._received.size

    @property
    def sha256(self) -> str | None:
        """Its SHA-256, hex (the ETag)."""
        return self._received.sha256


def _disposition_name(header: str) -> str | None:
    """The file name a Content-Disposition gives (RFC 6266: filename* first)."""
    if found := re.search(r"filename\*=UTF-8''([^;\s]+)", header, re.IGNORECASE):
        return unquote(found[1])
    if found := re.search(r'filename="([^"]*)"', header):
        return found[1]
    return None
