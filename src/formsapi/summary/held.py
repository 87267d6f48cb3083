"""A form's submissions held in this process as its summary counts them, for
the summaries that a hidden field or an answer filters: the kept answer
counts cannot split by either, and counting the matching rows in the
database reads and parses every one of them on each ask.

Each held submission is its tally pairs (tallies.tally), numbered; each pair
lists the slots of the submissions that hold it, so a filter is a union of
such lists and a count a walk over them. The copy is read, and kept exact,
through the form's change feed, as a client of the feed keeps its copy: an
ask first applies the posts, edits and deletes numbered after the copy's
number, so what it counts is the form as of one change."""

import asyncio
import hashlib
import logging
import os
import struct
import sys
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Row

from formsapi.db.session import ReadSession
from formsapi.language.compiled import Counted
from formsapi.submission import repository as submission_repository
from formsapi.submission.repository.changes import ROW_CHANGE_SEQ, ROW_ID, ChangeRow
from formsapi.submission.repository.tallies import ENDING, VALUE_MAX
from formsapi.summary import stored
from formsapi.summary.figures import Tallies
from formsapi.summary.repository import Filters, add_pair

log = logging.getLogger(__name__)

# Changes read a statement at a time (fewer when their answers are large):
# each page is then held at once, holding up the event loop that long.
PAGE = 1_000
# More pages of changes than this since an ask's copy: read it again instead.
CATCH_UP_PAGES = 20
# Slot list entries a count walks between letting other requests run.
WALK = 200_000
# How long shutdown waits for a form being read to reach the end of its page.
STOP_SECONDS = 5.0
# Bytes a held pair costs beyond its text and slot lists: the pair, its
# entry, its list; and a value remembered for it, beyond the value's text.
_PAIR_BYTES = 300
_MEMO_BYTES = 150
# A slot's own bytes: id hashes, time, version, liveness.
_SLOT_BYTES = 29

# The value of a key counted alone (a text answer's): its pair's text is "".
_ALONE = object()

# A submission is known by two 64-bit halves of a hash of its id keyed by its
# copy's own key (kept with the copy when it is stored): two ids sharing both
# are as likely as a guess of a 128-bit key.
Identity = tuple[int, int]
_HALVES = struct.Struct("<qq")
# Changes since a stored image before it is written again (a delete or an
# edit sooner: what they removed leaves the disk too).
SAVE_CHANGES = 5 * PAGE


@dataclass
class _Rows:
    """One form's held submissions, as of its change number `seq`."""

    counted: Counted  # what the summary counts
    hidden: frozenset[str]  # hidden fields' keys: held with their values, to filter by
    seq: int = 0
    # The form's change number when the copy began: only a change after it
    # can replace or delete a held submission (the feed gives each one once).
    fresh: int = 0
    # A change number every change up to which is applied: the copy's own
    # number lags the form's when its last change (a delete) was purged.
    known: int = 0
    codes: dict[tuple[str, str], int] = field(default_factory=dict)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    slots: list["array[int]"] = field(default_factory=list)  # per pair: the slots holding it
    hashes: "array[int]" = field(default_factory=lambda: array("q"))
    checks: "array[int]" = field(default_factory=lambda: array("q"))  # the second hashes
    times: "array[float]" = field(default_factory=lambda: array("d"))
    versions: "array[int]" = field(default_factory=lambda: array("i"))
    live: bytearray = field(default_factory=bytearray)
    dead: int = 0
    _memo: dict[Any, int] = field(default_factory=dict)
    # Valued keys one of whose values was too long to hold (tallies.VALUE_MAX):
    # a filter on them is counted by the database.
    clipped: set[str] = field(default_factory=set)
    size: int = 0
    key: bytes = field(default_factory=lambda: os.urandom(16))
    last: Identity = (0, 0)  # the identity of the change numbered `seq`
    # The change number and dead slots of the image last stored or loaded.
    saved: tuple[int, int] | None = None
    held: Counted = field(init=False)  # `counted` with the hidden fields' values too

    def __post_init__(self) -> None:
        self.held = Counted(valued=self.counted.valued | self.hidden, groups=self.counted.groups)

    def identity(self, submission_id: str) -> Identity:
        digest = hashlib.blake2b(submission_id.encode(), digest_size=16, key=self.key).digest()
        return _HALVES.unpack(digest)

    def image(self) -> stored.Image:
        """Its parts, copied: the copy goes on changing while they are written."""
        return stored.Image(
            valued=self.counted.valued,
            groups=dict(self.counted.groups),
            hidden=self.hidden,
            seq=self.seq,
            fresh=self.fresh,
            known=self.known,
            key=self.key,
            last=self.last,
            clipped=set(self.clipped),
            pairs=list(self.pairs),
            slots=[slots[:] for slots in self.slots],
            hashes=self.hashes[:],
            checks=self.checks[:],
            times=self.times[:],
            versions=self.versions[:],
            live=self.live[:],
        )

    @classmethod
    def of_image(
        cls, image: stored.Image, counted: Counted, hidden: frozenset[str]
    ) -> "_Rows | None":
        """The copy an image holds; None if the form's questions now count
        other keys than it did."""
        if image.valued != counted.valued or image.groups != counted.groups:
            return None
        if image.hidden != hidden:
            return None
        rows = cls(
            counted=counted,
            hidden=hidden,
            seq=image.seq,
            fresh=image.fresh,
            known=image.known,
            codes={pair: code for code, pair in enumerate(image.pairs)},
            pairs=image.pairs,
            slots=image.slots,
            hashes=image.hashes,
            checks=image.checks,
            times=image.times,
            versions=image.versions,
            live=bytearray(b"\x01") * len(image.hashes),
            clipped=image.clipped,
            key=image.key,
            last=image.last,
            saved=(image.seq, 0),
        )
        # As held: the remembered values are counted again as they are met.
        rows.size = len(rows.live) * _SLOT_BYTES + sum(
            4 * len(slots) + _PAIR_BYTES + len(text)
            for (_, text), slots in zip(rows.pairs, rows.slots, strict=True)
        )
        return rows

    def apply(self, page: Sequence[ChangeRow]) -> None:
        """Apply a page of the form's change feed (changes.changes_after, with
        times): an edit's or a delete's submission leaves its slot, a new or
        edited one takes a new slot."""
        identity, fresh = self.identity, self.fresh
        replaced = {
            identity(id_)
            for id_, _, _, _, version, seq, _, _, _, deleted_at, _ in page
            if seq > fresh and (deleted_at is not None or version > 1)
        }
        if replaced:
            self._kill(replaced)
        for id_, form_version, submitted_at, _, _, _, answers, ending, _, deleted_at, _ in page:
            if deleted_at is None:
                self._add(form_version, submitted_at, orjson.loads(answers), ending, identity(id_))
        if page:
            self.seq = page[-1][ROW_CHANGE_SEQ]
            self.last = identity(page[-1][ROW_ID])

    def _kill(self, identities: set[Identity]) -> None:
        """Their live slots are dead: one walk over the slots."""
        firsts = {first for first, _ in identities}
        checks, live = self.checks, self.live
        for slot, first in enumerate(self.hashes):
            if first in firsts and live[slot] and (first, checks[slot]) in identities:
                live[slot] = 0
                self.dead += 1

    def _add(
        self,
        form_version: int,
        submitted_at: datetime,
        answers: dict[str, Any],
        ending: str | None,
        identity: Identity,
    ) -> None:
        """Hold a submission: its tally pairs as tallies.tally makes them."""
        slot = len(self.hashes)
        self.hashes.append(identity[0])
        self.checks.append(identity[1])
        self.times.append(submitted_at.timestamp())
        self.versions.append(form_version)
        self.live.append(1)
        memo, valued, groups = self._memo, self.held.valued, self.counted.groups
        found = []
        # The common case inline: a pair met before (the cost of holding a form).
        for key, value in answers.items():
            try:
                code = memo[(key, value.__class__, value) if key in valued else key]
            except (KeyError, TypeError):
                code = self._code_of(key, value if key in valued else _ALONE)
            found.append(code)
        if groups:
            found += {self._code_of(groups[key], _ALONE) for key in answers if key in groups}
        found.append(self._code_of(ENDING, ending))
        for code in found:
            self.slots[code].append(slot)
        self.size += _SLOT_BYTES + 4 * len(found)

    def _code_of(self, key: str, value: Any) -> int:
        """The number of the pair (key, value's JSON text, or "" for a key
        counted alone), remembered by the value itself: most answers repeat,
        and encoding each again cost more than the rest of holding it."""
        try:
            # By type too: 1, 1.0 and true are different answers.
            memo: Any = key if value is _ALONE else (key, value.__class__, value)
            return self._memo[memo]
        except KeyError:
            pass
        except TypeError:  # a list or an object: by its JSON
            memo = (key, value.__class__, orjson.dumps(value))
            if memo in self._memo:
                return self._memo[memo]
        text = "" if value is _ALONE else orjson.dumps(value).decode()
        long = len(text) > VALUE_MAX
        if long:
            text = ""  # counted as answered only, as the kept counts do
            self.clipped.add(key)
        code = self.codes.get((key, text))
        if code is None:
            code = self.codes[key, text] = len(self.pairs)
            self.pairs.append((key, text))
            self.slots.append(array("I"))
            self.size += _PAIR_BYTES + len(text)
        if not long:  # long values are mostly unique: not remembered
            self._memo[memo] = code
            self.size += _MEMO_BYTES + len(text)
        return code

    async def count(self, filters: Filters, masks: list[bytes]) -> Tallies:
        """The tallies of the live slots that every mask (one byte per slot,
        0 or 1) and the filters' time range and version keep. Counted, like
        every change to the copy, in its organization's turn
        (service.summary_json): the copy cannot change while this waits."""
        keep = int.from_bytes(self.live, "little")
        for mask in masks:
            keep &= int.from_bytes(mask, "little")
        if filters.since is not None or filters.until is not None:
            low = filters.since.timestamp() if filters.since else float("-inf")
            high = filters.until.timestamp() if filters.until else float("inf")
            within = bytes(low <= moment < high for moment in self.times)
            keep &= int.from_bytes(within, "little")
        if filters.version is not None:
            wanted = filters.version
            keep &= int.from_bytes(bytes(v == wanted for v in self.versions), "little")
        at = keep.to_bytes(len(self.live), "little").__getitem__
        found = Tallies()
        shown = self.counted.valued | {ENDING}
        walked = 0
        for (key, value), slots in zip(self.pairs, self.slots, strict=True):
            total = sum(map(at, slots))
            if total:
                add_pair(found, key, value if key in shown and value else None, total)
            walked += len(slots)
            if walked > WALK:  # a long count lets other requests run
                walked = 0
                await asyncio.sleep(0)
        return found

    def matching(self, key: str, accepts: Callable[[Any], bool]) -> bytes | None:
        """One byte per slot: 1 where the submission's value of `key` is one
        `accepts` takes (given the decoded value); None when the database
        must answer (a value of `key` was too long to hold)."""
        if key in self.clipped:
            return None
        mask = bytearray(len(self.live))
        for (name, value), slots in zip(self.pairs, self.slots, strict=True):
            if name == key and value and accepts(orjson.loads(value)):
                for slot in slots:
                    mask[slot] = 1
        return bytes(mask)


async def _follow(
    session: ReadSession,
    rows: _Rows,
    organization_id: str,
    form_id: str,
    capacity: int,
    pages: int,
    stopped: Callable[[], bool] = lambda: False,
) -> bool:
    """Apply the form's changes after rows.seq, a page of its change feed at a
    time, as a client of the feed does; False when the copy cannot be kept:
    the form is gone, deletes it needs were purged, more than `pages` pages
    are left, it outgrew `capacity` or is mostly dead slots, or `stopped()`
    turned true between two pages."""
    if not rows.seq:
        position = await submission_repository.positions(session, organization_id, form_id)
        if position is None:
            return False
        rows.fresh = rows.known = position.change_seq
    fetching = asyncio.ensure_future(_page(session, organization_id, form_id, rows.seq))
    try:
        for left in range(pages - 1, -1, -1):
            page, more, position = await fetching
            if position is None or position.tombstone_horizon > max(rows.seq, rows.fresh):
                return False
            if more and left and not stopped():
                # The database reads the next page while this one is applied.
                fetching = asyncio.ensure_future(
                    _page(session, organization_id, form_id, page[-1][ROW_CHANGE_SEQ])
                )
            await asyncio.sleep(0)  # the read sent, and other requests run between pages
            rows.apply(page)
            if rows.size > capacity or rows.dead > len(rows.live) // 2 + PAGE:
                return False
            if not more:
                return True
            if stopped():
                return False
        return False
    except asyncio.CancelledError:
        fetching.cancel()  # a cancel reaches the page read ahead, as it reached the read before
        raise
    finally:
        # A page read ahead and not used ends before the session is given back.
        with suppress(Exception):
            await fetching


async def _numbered_alike(session: ReadSession, name: stored.Name, rows: _Rows) -> bool:
    """Whether the database numbers the changes of a stored copy as the copy
    does: its last change the same submission's, and none after it up to
    the number the copy says it knows (a database restored from a backup
    fails one or the other, but for the same submission changed at the same
    number in both histories)."""
    known = max(rows.known, rows.fresh)
    position = await submission_repository.positions(session, *name)
    if position is None or position.change_seq < max(known, rows.seq):
        return False
    changes = submission_repository.changes_after
    page, _ = await changes(session, *name, rows.seq - 1, 1, times=True)
    if not page or page[0][ROW_CHANGE_SEQ] != rows.seq:
        return False
    if rows.identity(page[0][ROW_ID]) != rows.last:
        return False
    if known > rows.seq:
        after, _ = await changes(session, *name, rows.seq, 1, times=True)
        return not after or after[0][ROW_CHANGE_SEQ] > known
    return True


async def _page(
    session: ReadSession, organization_id: str, form_id: str, after: int
) -> tuple[Sequence[ChangeRow], bool, Row[int, int] | None]:
    """A page of the form's changes after `after`, whether more follow, and
    the form's positions read after it: a purge that commits between the
    two is seen there. Only deletes after the copy began, and after its
    number, matter."""
    page, more = await submission_repository.changes_after(
        session, organization_id, form_id, after, PAGE, times=True
    )
    return page, more, await submission_repository.positions(session, organization_id, form_id)


class Held:
    """The forms held in this process, least recently asked dropped first
    past `capacity` bytes (an estimate). A form is read into memory in the
    background, one at a time: after an ask that found it not held (that ask
    and those until the read ends are counted by the database, as before),
    or ahead of any ask, as the process warms its largest forms
    (service.warm): those only into the room left, pushing none out, and
    first in line to be dropped."""

    def __init__(self, capacity: int, store: stored.Store | None = None) -> None:
        self.capacity = capacity
        self.store = store or stored.Store(None)
        self._forms: OrderedDict[tuple[str, str], _Rows] = OrderedDict()
        # Forms found too big to hold: not read again by this process.
        self._too_big: set[tuple[str, str]] = set()
        # Forms warming found no room for, by the bytes they had reached:
        # not warmed again until there is that much room.
        self._no_room: dict[tuple[str, str], int] = {}
        self._reading: asyncio.Task[None] | None = None
        # The last read an ask wanted while another ran: it goes next.
        self._next: tuple[Any, tuple[str, str], Counted, frozenset[str]] | None = None
        self._stopping = False

    async def rows(
        self,
        session: ReadSession,
        organization_id: str,
        form_id: str,
        seq: int,
        counted: Counted,
        hidden: frozenset[str],
    ) -> _Rows | None:
        """The form's held rows, brought to its change number `seq` or
        later; None if it is not held (see `read`)."""
        name = (organization_id, form_id)
        rows = self._forms.pop(name, None)
        if rows is not None and (rows.counted != counted or rows.hidden != hidden):
            rows = None  # the form's questions changed what is counted
        loaded = rows is None and name not in self._too_big
        if loaded:
            rows = await self._stored(session, name, counted, hidden)
        if rows is not None and max(rows.seq, rows.known) < seq:
            if loaded:
                caught_up = await self._caught_up(session, rows, name, self.capacity)
            else:
                caught_up = await _follow(session, rows, *name, self.capacity, CATCH_UP_PAGES)
            if caught_up:
                # `seq` was read before the pages: every change up to it was in them.
                rows.known = seq
            else:
                rows = None  # read again, in the background
        if rows is not None:
            self._keep(name, rows)
        return rows

    async def catch_up(
        self, session: ReadSession, organization_id: str, form_id: str, seq: int
    ) -> None:
        """Bring a held form up to its change number `seq` where it stands in
        the order of asks (warming's: not an ask). Dropped if it cannot be
        in CATCH_UP_PAGES, or if it no longer fits: it, not another form."""
        name = (organization_id, form_id)
        rows = self._forms.get(name)
        if rows is None or max(rows.seq, rows.known) >= seq:
            return
        if await _follow(session, rows, organization_id, form_id, self.capacity, CATCH_UP_PAGES):
            rows.known = seq
            if self.room() >= 0:
                return
            self._no_room[name] = rows.size
        self._forms.pop(name, None)

    async def _stored(
        self, session: ReadSession, name: stored.Name, counted: Counted, hidden: frozenset[str]
    ) -> _Rows | None:
        """The form's stored image as a copy, if there is one the database
        still numbers as it does; brought up to date by the caller. One that
        is not is removed (warming stores the form again)."""
        if not self.store.has(name):
            return None
        image = await asyncio.to_thread(self.store.load, name)
        rows = None if image is None else _Rows.of_image(image, counted, hidden)
        if rows is not None and await _numbered_alike(session, name, rows):
            return rows
        await asyncio.to_thread(self.store.drop, name)
        return None

    async def _caught_up(
        self,
        session: ReadSession,
        rows: _Rows,
        name: stored.Name,
        room: int,
        stopped: Callable[[], bool] = lambda: False,
    ) -> bool:
        """_follow for a copy made from its stored image; one that cannot be
        brought up to date has its file removed (warming stores the form
        again), unless it only outgrew `room` or shutdown stopped it."""
        if await _follow(session, rows, *name, room, CATCH_UP_PAGES, stopped):
            return True
        if rows.size <= room and not stopped():
            await asyncio.to_thread(self.store.drop, name)
        return False

    async def save(self, organization_id: str, form_id: str) -> None:
        """Store the held form's image if it changed by SAVE_CHANGES, or lost
        a submission, since the last written, or if it has none (service.warm,
        each round: a write that failed is tried again at the next)."""
        name = (organization_id, form_id)
        rows = self._forms.get(name)
        if rows is None or self.store.directory is None:
            return
        if rows.saved is not None and self.store.has(name):
            seq, dead = rows.saved
            if rows.dead == dead and rows.seq - seq < SAVE_CHANGES:
                # Up to date enough: marked so, for the other processes' sweeps.
                await asyncio.to_thread(self.store.touch, name)
                return
        state = (rows.seq, rows.dead)
        if await asyncio.to_thread(self.store.save, name, rows.image()):
            rows.saved = state

    async def sweep(self, warmed: set[stored.Name], unkept: float) -> None:
        """Remove the stored images of forms not `warmed`, and of those this
        process does not hold, the images no process has kept up to date
        for `unkept` seconds (service.warm, each round)."""
        held = {name for name in warmed if name in self._forms}
        await asyncio.to_thread(self.store.sweep, warmed, held, time.time(), unkept)

    def holds(self, organization_id: str, form_id: str) -> bool:
        return (organization_id, form_id) in self._forms

    def may_fit(self, submissions: int) -> bool:
        """Whether a form of that many submissions may fit in the room left
        (each costs at least its slot)."""
        return submissions * _SLOT_BYTES <= self.room()

    def room(self) -> int:
        """Bytes left before a form read would push another out."""
        return self.capacity - sum(rows.size for rows in self._forms.values())

    def read(
        self,
        session: ReadSession,
        organization_id: str,
        form_id: str,
        counted: Counted,
        hidden: frozenset[str],
        *,
        warming: bool = False,
    ) -> bool:
        """Start reading the form into memory in the background, on `session`'s
        engine, unless it is held or too big; an ask's read waits for the one
        running, if any, and goes next. `warming`, only into the room left,
        and not while another read runs. Whether a read started."""
        name = (organization_id, form_id)
        if name in self._forms or name in self._too_big or self.capacity <= 0 or self._stopping:
            return False
        if warming and self.room() < self._no_room.get(name, 1):
            return False
        if self._reading is not None and not self._reading.done():
            if not warming:
                self._next = (session.bind, name, counted, hidden)
            return False
        self._start(session.bind, name, counted, hidden, warming)
        return True

    def _start(
        self,
        bind: Any,
        name: tuple[str, str],
        counted: Counted,
        hidden: frozenset[str],
        warming: bool,
    ) -> None:
        room = self.room() if warming else self.capacity

        async def read() -> None:
            try:
                async with ReadSession(bind=bind) as own:
                    stopped = lambda: self._stopping  # noqa: E731
                    # From its stored image if there is one (a copy that cannot
                    # be brought up to date is read whole after all)...
                    rows = await self._stored(own, name, counted, hidden)
                    kept = rows is not None and await self._caught_up(
                        own, rows, name, room, stopped
                    )
                    if not kept and (rows is None or rows.size <= room):
                        # ...else from the database.
                        rows = _Rows(counted=counted, hidden=hidden)
                        kept = await _follow(own, rows, *name, room, sys.maxsize, stopped)
                    assert rows is not None
                    if kept:
                        self._keep(name, rows, warmed=warming)
                    elif rows.size > self.capacity:
                        self._too_big.add(name)
                    elif warming and rows.size > room:
                        self._no_room[name] = rows.size
            except Exception:  # an outage, a disposed engine: asks count in the database
                log.warning("form %s was not read into memory", name[1], exc_info=True)
            finally:
                self._reading = None
                wanted, self._next = self._next, None
                if (
                    wanted is not None
                    and not self._stopping
                    and wanted[1] not in self._forms
                    and wanted[1] not in self._too_big
                ):
                    self._start(*wanted, warming=False)

        self._reading = asyncio.create_task(read())

    def _keep(self, name: tuple[str, str], rows: _Rows, *, warmed: bool = False) -> None:
        if rows.size > self.capacity:
            self._too_big.add(name)
            return
        if warmed:
            if name in self._forms:
                return
            if rows.size > self.room():  # asks' copies grew meanwhile
                self._no_room[name] = rows.size
                return
            self._forms[name] = rows
            self._forms.move_to_end(name, last=False)  # asked by nobody yet
            return
        self._no_room.pop(name, None)
        self._forms[name] = rows
        while self.room() < 0:
            self._forms.popitem(last=False)

    def copy_of(self, form_id: str) -> _Rows | None:
        """The form's held copy, if any (tests)."""
        return next((rows for (_, held), rows in self._forms.items() if held == form_id), None)

    async def settled(self) -> None:
        """Wait for the form being read, if any, and for the one an ask
        wanted next (service.warm, tests and the bench)."""
        while (reading := self._reading) is not None and not reading.done():
            await asyncio.shield(reading)

    async def stop(self) -> None:
        """Stop reading a form (at shutdown: before the engine goes). The read
        ends after the page it is on: a task cancelled inside a statement
        leaves its pooled connection to the garbage collector. One that takes
        longer than STOP_SECONDS (a database gone quiet) is cancelled."""
        self._next = None
        reading = self._reading
        if reading is None:
            return
        self._stopping = True
        try:
            await asyncio.wait_for(asyncio.shield(reading), STOP_SECONDS)
        except TimeoutError:
            reading.cancel()
            with suppress(asyncio.CancelledError):
                await reading
        except asyncio.CancelledError:  # the shutdown itself cut short: the read goes too
            reading.cancel()
            raise
        finally:
            self._stopping = False
            self._next = None  # (wanted while the read was being cancelled)
            if self._reading is reading:  # (a task cancelled before its start runs no finally)
                self._reading = None

    def clear(self) -> None:
        self._forms.clear()
        self._too_big.clear()
        self._no_room.clear()


# create_app sets its capacity from FORMSAPI_SUMMARY_MEMORY_MB.
HELD = Held(256 * 1024 * 1024)
