"""A form's submissions held in this process as its summary counts them, for
the summaries that a hidden field or an answer filters: the kept answer
counts cannot split by either, and counting the matching rows in the
database reads and parses every one of them on each ask.

Each held submission is its tally pairs (tallies.tally), numbered; each pair
lists the slots of the submissions that hold it, so a filter is a union of
such lists and a count a walk over them. The form's change feed keeps the
copy exact: an ask first reads the form's changes past the number held
(new and edited submissions, tombstones) in one statement, so what is
counted is the form as of one moment, edits and deletes included."""

import asyncio
import logging
from array import array
from collections import OrderedDict
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import BigInteger, Integer, String, Text, cast, literal, null, select, union_all

from formsapi.db import ReadSession
from formsapi.form.compiled import Counted
from formsapi.models import Form, Submission, SubmissionTombstone
from formsapi.submission.repository.tallies import ENDING, VALUE_MAX
from formsapi.summary.figures import Tallies
from formsapi.summary.repository import Filters, add_pair
from formsapi.tenancy import scoped

log = logging.getLogger(__name__)

# Submissions read a statement at a time while a form is first held: each
# page is then held at once, holding up the event loop that long.
PAGE = 1_000
# More changes than this since the held number: read the form again instead.
CHANGES_MAX = 20_000
# Bytes a held pair costs beyond its slot lists: the pair, its entries, its list.
_PAIR_BYTES = 400
# A slot's own bytes: id hashes, time, version, liveness.
_SLOT_BYTES = 29

LIVE, DELETED, FORM = 0, 1, 2


# The value of a key counted alone (a text answer's): its pair's text is "".
_ALONE = object()

# A submission is known by two 64-bit hashes of its id (this process's own):
# two ids that share both are as likely as a guess of a 128-bit key.
Identity = tuple[int, int]


def _identity(submission_id: str) -> Identity:
    return hash(submission_id), hash((submission_id, 1))


@dataclass
class _Rows:
    """One form's held submissions, as of its change number `seq`."""

    counted: Counted  # what the summary counts
    hidden: frozenset[str]  # hidden fields' keys: held with their values, to filter by
    seq: int = 0
    codes: dict[tuple[str, str], int] = field(default_factory=dict)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    slots: list["array[int]"] = field(default_factory=list)  # per pair: the slots holding it
    hashes: "array[int]" = field(default_factory=lambda: array("q"))
    checks: "array[int]" = field(default_factory=lambda: array("q"))  # the second hashes
    times: "array[float]" = field(default_factory=lambda: array("d"))
    versions: "array[int]" = field(default_factory=lambda: array("i"))
    live: bytearray = field(default_factory=bytearray)
    _memo: dict[Any, int] = field(default_factory=dict)
    # Valued keys one of whose values was too long to hold (tallies.VALUE_MAX):
    # a filter on them is counted by the database.
    clipped: set[str] = field(default_factory=set)
    size: int = 0
    held: Counted = field(init=False)  # `counted` with the hidden fields' values too

    def __post_init__(self) -> None:
        self.held = Counted(valued=self.counted.valued | self.hidden, groups=self.counted.groups)

    def add(
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
        if len(text) > VALUE_MAX:
            text = ""  # counted as answered only, as the kept counts do
            self.clipped.add(key)
        code = self.codes.get((key, text))
        if code is None:
            code = self.codes[key, text] = len(self.pairs)
            self.pairs.append((key, text))
            self.slots.append(array("I"))
            self.size += _PAIR_BYTES
        self._memo[memo] = code
        return code

    def drop(self, identity: Identity) -> None:
        """The submission's live slot, if it is held, is dead."""
        start = 0
        while True:
            try:
                slot = self.hashes.index(identity[0], start)
            except ValueError:
                return
            if self.live[slot] and self.checks[slot] == identity[1]:
                self.live[slot] = 0
                return
            start = slot + 1

    def count(self, filters: Filters, masks: list[bytes]) -> Tallies:
        """The tallies of the live slots that every mask (one byte per slot,
        0 or 1) and the filters' time range and version keep."""
        keep = int.from_bytes(self.live, "little")
        for mask in masks:
            keep &= int.from_bytes(mask, "little")
        n = len(self.live)
        if filters.since is not None or filters.until is not None:
            low = filters.since.timestamp() if filters.since else float("-inf")
            high = filters.until.timestamp() if filters.until else float("inf")
            within = bytes(low <= moment < high for moment in self.times)
            keep &= int.from_bytes(within, "little")
        if filters.version is not None:
            wanted = filters.version
            keep &= int.from_bytes(bytes(v == wanted for v in self.versions), "little")
        kept = keep.to_bytes(n, "little")
        found = Tallies()
        at = kept.__getitem__
        shown = self.counted.valued | {ENDING}
        for (key, value), slots in zip(self.pairs, self.slots, strict=True):
            total = sum(map(at, slots))
            if total:
                add_pair(found, key, value if key in shown and value else None, total)
        return found

    def matching(self, key: str, accepts: Any) -> bytes | None:
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


def _read_changes(organization_id: str, form_id: str, after: int) -> Any:
    """Live submissions and tombstones past `after`, and the form's change
    number and tombstone horizon: one statement, one moment."""
    live = select(
        Submission.id,
        Submission.form_version,
        Submission.submitted_at,
        cast(Submission.answers, Text).label("answers"),
        Submission.ending,
        Submission.version,
        Submission.change_seq,
        literal(LIVE, Integer).label("kind"),
    ).where(
        scoped(Submission, organization_id),
        Submission.form_id == form_id,
        Submission.change_seq > after,
    )
    dead = select(
        SubmissionTombstone.submission_id,
        cast(null(), Integer),
        cast(null(), Submission.submitted_at.type),
        cast(null(), Text),
        cast(null(), String),
        cast(null(), Integer),
        SubmissionTombstone.change_seq,
        literal(DELETED, Integer),
    ).where(
        scoped(SubmissionTombstone, organization_id),
        SubmissionTombstone.form_id == form_id,
        SubmissionTombstone.change_seq > after,
    )
    form = select(
        cast(null(), String),
        cast(null(), Integer),
        cast(null(), Submission.submitted_at.type),
        cast(null(), Text),
        cast(null(), String),
        cast(Form.tombstone_horizon, BigInteger),
        cast(Form.change_seq, BigInteger),
        literal(FORM, Integer),
    ).where(scoped(Form, organization_id), Form.id == form_id)
    return union_all(live, dead, form).limit(CHANGES_MAX + 2)


async def _catch_up(session: ReadSession, rows: _Rows, organization_id: str, form_id: str) -> bool:
    """Apply the form's changes past rows.seq; False when they are too many
    or older tombstones are gone: the form must be read again."""
    found = (await session.execute(_read_changes(organization_id, form_id, rows.seq))).all()
    forms = [row for row in found if row.kind == FORM]
    if not forms or len(found) > CHANGES_MAX:
        return False
    horizon, seq = forms[0][5], forms[0].change_seq
    if rows.seq and horizon > rows.seq:
        return False
    changes = sorted((row for row in found if row.kind != FORM), key=lambda row: row.change_seq)
    for row in changes:
        identity = _identity(row.id)
        if row.kind == DELETED:
            rows.drop(identity)
            continue
        if row.version > 1 and rows.seq:
            rows.drop(identity)  # an edit: its earlier answers go
        answers = orjson.loads(row.answers)
        rows.add(row.form_version, row.submitted_at, answers, row.ending, identity)
    rows.seq = max(rows.seq, seq)
    return True


async def _read_all(
    session: ReadSession, rows: _Rows, organization_id: str, form_id: str, capacity: int
) -> bool:
    """Hold the form's submissions up to its change number now, a page at a
    time, then what changed meanwhile. False if they outgrow `capacity`."""
    upto = (
        await session.execute(
            select(Form.change_seq).where(scoped(Form, organization_id), Form.id == form_id)
        )
    ).scalar()
    if upto is None:
        return False
    cursor = 0
    while True:
        page = (
            await (await session.connection()).execute(
                select(
                    Submission.id,
                    Submission.form_version,
                    Submission.submitted_at,
                    cast(Submission.answers, Text),
                    Submission.ending,
                    Submission.change_seq,
                )
                .where(
                    scoped(Submission, organization_id),
                    Submission.form_id == form_id,
                    Submission.change_seq > cursor,
                    Submission.change_seq <= upto,
                )
                .order_by(Submission.change_seq)
                .limit(PAGE)
            )
        ).all()
        for id_, form_version, submitted_at, answers, ending, _ in page:
            rows.add(form_version, submitted_at, orjson.loads(answers), ending, _identity(id_))
        if rows.size > capacity:
            return False
        if len(page) < PAGE:
            break
        cursor = page[-1][5]
    # Edits and deletes made while the pages were read come after `upto`.
    rows.seq = upto
    return await _catch_up(session, rows, organization_id, form_id)


class Held:
    """The forms held in this process, least recently asked dropped first
    past `capacity` bytes (an estimate). A form is read into memory in the
    background, one at a time, after an ask that found it not held: that ask
    and those until the read ends are counted by the database, as before."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._forms: OrderedDict[tuple[str, str], _Rows] = OrderedDict()
        # Forms found too big to hold: not read again by this process.
        self._too_big: set[tuple[str, str]] = set()
        self._reading: asyncio.Task[None] | None = None

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
        if (
            rows is not None
            and rows.seq < seq
            and not await _catch_up(session, rows, organization_id, form_id)
        ):
            rows = None
        if rows is not None:
            self._keep(name, rows)
        return rows

    def read(
        self,
        session: ReadSession,
        organization_id: str,
        form_id: str,
        counted: Counted,
        hidden: frozenset[str],
    ) -> None:
        """Start reading the form into memory in the background, on `session`'s
        engine, unless it is held, another form is being read, or it is too big."""
        name = (organization_id, form_id)
        busy = (self._reading is not None and not self._reading.done()) or name in self._forms
        if busy or name in self._too_big or self.capacity <= 0:
            return
        bind, rows = session.bind, _Rows(counted=counted, hidden=hidden)

        async def read() -> None:
            try:
                async with ReadSession(bind=bind) as own:
                    if await _read_all(own, rows, *name, self.capacity):
                        self._keep(name, rows)
                    elif rows.size > self.capacity:
                        self._too_big.add(name)
            except Exception:  # an outage, a disposed engine: asks count in the database
                log.warning("form %s was not read into memory", name[1], exc_info=True)
            finally:
                self._reading = None

        self._reading = asyncio.create_task(read())

    def _keep(self, name: tuple[str, str], rows: _Rows) -> None:
        self._forms[name] = rows
        while sum(held.size for held in self._forms.values()) > self.capacity:
            self._forms.popitem(last=False)

    async def settled(self) -> None:
        """Wait for the form being read, if any (tests and the bench)."""
        if self._reading is not None:
            await asyncio.shield(self._reading)

    async def stop(self) -> None:
        """Stop reading a form (at shutdown: before the engine goes)."""
        if self._reading is not None:
            self._reading.cancel()
            with suppress(asyncio.CancelledError):
                await self._reading
            self._reading = None  # (a task cancelled before its start runs no finally)

    def clear(self) -> None:
        self._forms.clear()
        self._too_big.clear()


# create_app sets its capacity from FORMSAPI_SUMMARY_MEMORY_MB.
HELD = Held(256 * 1024 * 1024)
