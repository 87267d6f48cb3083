"""Held forms kept on disk, so that a process that starts, or that dropped a
form, holds it again by reading one file and following the changes since,
instead of reading every submission from the database (the first filtered
ask of a large form waits for one or the other).

A file is an image of one form's held copy (summary.held) as of a change
number, written only without the submissions deleted or replaced since
they were held (their slots left out, the values only they had dropped),
and trusted only if it reads whole and the database still numbers the
image's changes as the image does (held._numbered_alike): a database
restored from a backup, or a form's questions changed, and the image is not
used. Nothing here is the data's record: any file may be removed at any
time, or fail to read, and the form is read from the database as before."""

import hashlib
import logging
import os
import re
import sys
import tempfile
from array import array
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from formsapi.submission.repository.tallies import VALUE_MAX

log = logging.getLogger(__name__)

_MAGIC = b"formsapi held form\n"
_DIGEST = 16
# A temporary file older than this was left by a process killed while writing it.
_STALE = 600.0
# The arrays' item types, in file order after the header: each as this machine lays it out.
_TYPES = {"hashes": "q", "checks": "q", "times": "d", "versions": "i"}

Name = tuple[str, str]  # (organization id, form id)
# Ours, by name: an organization's id, a form's (kit.ids), the suffix; and
# one being written (tempfile's random part).
_IMAGE = re.compile(r"org_[A-Za-z0-9_-]{1,60}\.frm_[A-Za-z0-9_-]{1,60}\.held")
_TEMPORARY = re.compile(r"\.org_[A-Za-z0-9_-]{1,60}\.frm_[A-Za-z0-9_-]{1,60}\.held\.\w+\.tmp")


@dataclass
class Image:
    """A held copy's parts, copied off it (held._Rows.image): the copy goes
    on changing while the image is written."""

    valued: frozenset[str]
    groups: dict[str, str]
    hidden: frozenset[str]
    seq: int
    fresh: int
    known: int
    key: bytes  # the copy's identity hash key
    last: tuple[int, int]  # the identity of the change numbered `seq`
    clipped: set[str]
    pairs: list[tuple[str, str]]
    slots: list["array[int]"]
    hashes: "array[int]"
    checks: "array[int]"
    times: "array[float]"
    versions: "array[int]"
    live: bytearray = field(default_factory=bytearray)  # empty: every slot live

    def compacted(self) -> "Image":
        """Without its dead slots, and without the pairs only they held: what
        a deleted or replaced submission answered is not written."""
        live = self.live
        if all(live):
            return self
        kept = [slot for slot, alive in enumerate(live) if alive]
        moved = array("q", [-1]) * len(live)
        for new, old in enumerate(kept):
            moved[old] = new
        pairs, slots = [], []
        for pair, held in zip(self.pairs, self.slots, strict=True):
            now = array("I", [moved[slot] for slot in held if live[slot]])
            if now:
                pairs.append(pair)
                slots.append(now)
        return replace(
            self,
            pairs=pairs,
            slots=slots,
            hashes=array("q", [self.hashes[slot] for slot in kept]),
            checks=array("q", [self.checks[slot] for slot in kept]),
            times=array("d", [self.times[slot] for slot in kept]),
            versions=array("i", [self.versions[slot] for slot in kept]),
            live=bytearray(),
        )


class Store:
    """Images of held forms, a file per form in `directory`, readable by this
    process's user alone; None keeps none."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def _path(self, name: Name) -> Path | None:
        file = f"{name[0]}.{name[1]}.held"
        if self.directory is None or _IMAGE.fullmatch(file) is None:
            return None
        return self.directory / file

    def has(self, name: Name) -> bool:
        path = self._path(name)
        try:
            return path is not None and path.is_file()
        except OSError:  # a directory this process may not search: as if none
            return False

    def save(self, name: Name, image: Image) -> bool:
        """Write the image whole or not at all (blocking: run in a thread);
        whether it was written. A failure is logged."""
        path = self._path(name)
        if path is None:
            return False
        temporary = None
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            body = _encode(image.compacted())
            descriptor, temporary = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
            )
            with os.fdopen(descriptor, "wb") as file:
                file.write(body)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
            temporary = None
        except (OSError, ValueError):
            log.warning("summaries: form %s was not stored", name[1], exc_info=True)
            # Better none than one that may hold answers deleted since.
            self.drop(name)
            return False
        finally:
            if temporary is not None:
                with suppress(OSError):
                    os.unlink(temporary)
        # The rename itself on disk: else an older image, with answers since
        # deleted, may be what a power cut leaves. Not every file system can.
        try:
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError:
            log.info("summaries: the directory of form %s's file was not synced", name[1])
        return True

    def load(self, name: Name) -> Image | None:
        """The form's image, if one was stored whole, by this version, for
        this machine's layout (blocking: run in a thread); a damaged one is
        removed."""
        path = self._path(name)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:  # none stored, or unreadable: read from the database
            return None
        try:
            return _decode(memoryview(data))
        except (ValueError, KeyError, TypeError, IndexError, OverflowError):
            log.warning("summaries: the stored copy of form %s is damaged", name[1])
            self.drop(name)
            return None

    def drop(self, name: Name) -> None:
        path = self._path(name)
        if path is not None:
            with suppress(OSError):
                path.unlink(missing_ok=True)

    def touch(self, name: Name) -> None:
        """Mark the form's image as kept up to date by a process that holds
        it (blocking: run in a thread): see `sweep`."""
        path = self._path(name)
        if path is not None:
            with suppress(OSError):
                os.utime(path)

    def sweep(self, warmed: set[Name], held: set[Name], now: float, unkept: float) -> None:
        """Remove the images of forms not `warmed` (deleted, or smaller now);
        of the warmed forms this process does not hold, those that no process
        has written or touched for `unkept` seconds (every process of a
        deployment may share the directory); and temporary files that a
        killed process left (blocking: run in a thread)."""
        if self.directory is None:
            return
        ours = {path.name: name in held for name in warmed if (path := self._path(name))}
        try:
            entries = list(os.scandir(self.directory))
        except OSError:  # none yet, or not ours to read
            return
        for entry in entries:  # ours alone, by name, whatever else the directory holds
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if _IMAGE.fullmatch(entry.name) is not None:
                    gone = entry.name not in ours
                    if gone or (not ours[entry.name] and now - entry.stat().st_mtime > unkept):
                        os.unlink(entry.path)
                elif _TEMPORARY.fullmatch(entry.name) and now - entry.stat().st_mtime > _STALE:
                    os.unlink(entry.path)
            except OSError:  # gone meanwhile, or not ours to remove: the others still go
                continue


# A change number or a count, as the database holds them; a 64-bit hash half.
_Number = Annotated[int, Field(ge=0, le=2**63 - 1)]
_Hash = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class _Header(BaseModel):
    """What a file says of its image, checked before any of it is used."""

    model_config = ConfigDict(strict=True, extra="forbid")

    format: Literal[1]
    byteorder: Literal["little", "big"]
    sizes: dict[str, int]
    value_max: int
    valued: list[str]
    groups: dict[str, str]
    hidden: list[str]
    seq: _Number = Field(ge=1)
    fresh: _Number
    known: _Number
    key: str = Field(pattern=r"^[0-9a-f]{32}$")
    last: tuple[_Hash, _Hash]
    clipped: list[str]
    pairs: list[tuple[str, str]]
    lengths: list[_Number]
    count: _Number


def _layout() -> dict[str, int]:
    return {code: array(code).itemsize for code in ("q", "d", "i", "I")}


def _encode(image: Image) -> bytes:
    header = _Header(
        format=1,
        byteorder=sys.byteorder,
        sizes=_layout(),
        value_max=VALUE_MAX,
        valued=sorted(image.valued),
        groups=image.groups,
        hidden=sorted(image.hidden),
        seq=image.seq,
        fresh=image.fresh,
        known=image.known,
        key=image.key.hex(),
        last=image.last,
        clipped=sorted(image.clipped),
        pairs=image.pairs,
        lengths=[len(slots) for slots in image.slots],
        count=len(image.hashes),
    )
    text = header.model_dump_json().encode()
    parts: list[bytes] = [_MAGIC, len(text).to_bytes(8, "little"), text]
    parts += [getattr(image, name).tobytes() for name in _TYPES]
    parts += [slots.tobytes() for slots in image.slots]
    body = b"".join(parts)
    return body + hashlib.blake2b(body, digest_size=_DIGEST).digest()


def _decode(data: memoryview) -> Image:
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
        raise ValueError("checksum")
    if body[: len(_MAGIC)] != _MAGIC:
        raise ValueError("format")
    at = len(_MAGIC) + 8
    length = int.from_bytes(body[len(_MAGIC) : at], "little")
    header = _Header.model_validate_json(bytes(body[at : at + length]))
    at += length
    # Written by a build that tallied as this one does, on a machine like this one.
    if header.byteorder != sys.byteorder or header.sizes != _layout():
        raise ValueError("layout")
    if header.value_max != VALUE_MAX or len(header.lengths) != len(header.pairs):
        raise ValueError("tallies")
    if len(set(header.pairs)) != len(header.pairs):
        raise ValueError("pairs")
    for _, value in header.pairs:
        if value:
            orjson.loads(value)  # each value as tallies write it: JSON
    count = header.count

    def take(code: str, items: int) -> "array[Any]":
        nonlocal at
        end = at + items * array(code).itemsize
        if end > len(body):
            raise ValueError("length")
        found = array(code)
        found.frombytes(body[at:end])
        at = end
        return found

    hashes, checks, times, versions = (take(code, count) for code in _TYPES.values())
    slots = [take("I", length) for length in header.lengths]
    if at != len(body) or any(held and max(held) >= count for held in slots):
        raise ValueError("slots")
    return Image(
        valued=frozenset(header.valued),
        groups=header.groups,
        hidden=frozenset(header.hidden),
        seq=header.seq,
        fresh=header.fresh,
        known=header.known,
        key=bytes.fromhex(header.key),
        last=header.last,
        clipped=set(header.clipped),
        pairs=header.pairs,
        slots=slots,
        hashes=hashes,
        checks=checks,
        times=times,
        versions=versions,
    )
