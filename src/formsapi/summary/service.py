"""A form's answer summary: the filters checked against the form, the
tallies counted (summary.repository), the figures worked out (summary.figures)."""

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from formsapi.db.session import ReadSession
from formsapi.errors import BadRequest, FormsAPIError, NotFound
from formsapi.form import service as form_service
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import compiled
from formsapi.language.blocks import (
    LARGEST_NUMBER,
    OTHER,
    Dropdown,
    Matrix,
    MultipleChoice,
    Nps,
    Number,
    OtherText,
    Ranking,
    Rating,
    Scale,
    SingleChoice,
    YesNo,
    questions,
)
from formsapi.language.compiled import Compiled
from formsapi.language.definition import Definition
from formsapi.models import Form
from formsapi.summary import buckets, figures, held, repository
from formsapi.summary.repository import AnswerIs, Filters

# A filter's value, after the key and its colon.
FILTER_MAX = 300
# How long a summary counted from rows waits for its organization's turn.
TURN_WAIT = 10.0
# The forms a round of warm() reads at most, and how often it runs.
WARM_FORMS = 100
WARM_EVERY = 60.0


class SummaryInProgress(FormsAPIError):
    """Another summary of your organization that counts rows (one filtered by
    a hidden field or an answer) is being counted on this server, and this
    one waited its turn for 10 s. Such summaries are counted one at a time
    per organization, so that one organization's long counts cannot hold the
    database for everyone else's. Retry after `Retry-After`."""

    status = 429
    title = "Too Many Requests"
    slug = "summary-in-progress"


class _Turns:
    """One summary counted from rows at a time per organization, in this process."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: Counter[str] = Counter()

    @asynccontextmanager
    async def turn(self, organization_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(organization_id, asyncio.Lock())
        self._waiting[organization_id] += 1
        try:
            try:
                await asyncio.wait_for(lock.acquire(), TURN_WAIT)
            except TimeoutError:
                raise SummaryInProgress(
                    "Another summary of your organization that counts rows is being "
                    "counted; they take turns. Retry in a few seconds.",
                    headers={"Retry-After": "5"},
                ) from None
            try:
                yield
            finally:
                lock.release()
        finally:
            self._waiting[organization_id] -= 1
            if not self._waiting[organization_id]:
                del self._waiting[organization_id], self._locks[organization_id]


TURNS = _Turns()


class _Made:
    """Summaries made in this process, as JSON, by the state of the form they
    were made from. Every change to a form's submissions (a post, an edit, a
    delete) moves its change_seq in the transaction that makes it, and a new
    version or any other change to the form moves its version or updated_at:
    a summary made after reading them is of that state or a newer one, so
    serving it while they are unchanged is exact, however fresh is asked."""

    MAX = 512

    def __init__(self) -> None:
        self._bodies: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> bytes | None:
        body = self._bodies.get(key)
        if body is not None:
            self._bodies.move_to_end(key)
        return body

    def put(self, key: tuple[Any, ...], body: bytes) -> None:
        self._bodies[key] = body
        if len(self._bodies) > self.MAX:
            self._bodies.popitem(last=False)

    def clear(self) -> None:
        self._bodies.clear()


MADE = _Made()

log = logging.getLogger(__name__)


async def summary(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
    hidden: str | None = None,
    answer: str | None = None,
) -> dict[str, Any]:
    """The summary of the form's submissions that the filters match, each
    question as its type calls for; with `version`, of that version's
    submissions, by that version's questions."""
    found: dict[str, Any] = orjson.loads(
        await summary_json(
            session,
            organization_id,
            form_id,
            since=since,
            until=until,
            version=version,
            hidden=hidden,
            answer=answer,
        )
    )
    return found


async def summary_json(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    version: int | None = None,
    hidden: str | None = None,
    answer: str | None = None,
) -> bytes:
    """summary() as the JSON the API sends, made once per state of the form
    (read alone first: a summary asked again costs that read)."""
    state = await form_service.change_state(session, organization_id, form_id)
    made_key = (organization_id, form_id, *state, since, until, version, hidden, answer)
    body = MADE.get(made_key)
    if body is not None:
        return body
    form = await form_service.get(session, organization_id, form_id)
    shown = await _version(session, form, version)
    if since is not None and until is not None and until <= since:
        raise BadRequest("`until` must be later than `since`: the range holds no moment.")
    filters = Filters(
        since=since,
        until=until,
        version=version,
        hidden=_hidden(shown, hidden) if hidden is not None else None,
        answer=_answer(shown, answer) if answer is not None else None,
    )
    # Counted from rows, a summary waits for its organization's turn.
    async with TURNS.turn(organization_id) if filters.counts_rows else nullcontext():
        tallies = None
        # Counted from the form held in memory, if it can be: its current version's.
        holdable = filters.counts_rows and shown.version == form.version
        if holdable:
            tallies = await _held_tallies(session, form, shown, state[0], filters)
        if tallies is None:
            tallies = await repository.tallies(
                session, organization_id, form.id, filters, shown.counted
            )
            if holdable:  # for the next asks
                _read_soon(session, form, shown)
    body = orjson.dumps(
        {
            "formId": form.id,
            "version": shown.version,
            "filters": {
                "since": isoformat_z(since) if since else None,
                "until": isoformat_z(until) if until else None,
                "version": version,
                "hidden": hidden,
                "answer": answer,
            },
            **figures.summarize(shown.blocks, shown.definition, tallies),
        }
    )
    MADE.put(made_key, body)
    return body


def prepare(session: ReadSession, form: Form) -> None:
    """Start reading the form into memory (summary.held) for the filtered
    summaries asked next: the settings area's Summary page offers filters."""
    _read_soon(session, form, _current(form))


def _current(form: Form) -> Compiled:
    return compiled.compile_version(
        form.organization_id, form.id, form.version, form.blocks, form.definition
    )


def _read_soon(session: ReadSession, form: Form, shown: Compiled, *, warming: bool = False) -> bool:
    return held.HELD.read(
        session,
        form.organization_id,
        form.id,
        shown.counted,
        _hidden_keys(shown),
        warming=warming,
    )


async def warm(sessionmaker: Callable[[], ReadSession], least: int) -> int:
    """Hold in this process's memory (summary.held) the forms with at least
    `least` submissions, the largest first, while they fit beside what is
    held: their filtered summaries are then counted from memory from their
    first ask. A form held already is brought up to date, where it stands
    in the order of asks; one not held is read, after any read an ask
    wanted. How many forms were read."""
    async with sessionmaker() as session:
        largest = await form_service.largest(session, least, WARM_FORMS)
    read = 0
    for organization_id, form_id, submissions, seq in largest:
        try:
            if await _warm_one(sessionmaker, organization_id, form_id, submissions, seq):
                read += 1
            # Kept on disk too, for the next process to hold it from (summary.stored).
            await held.HELD.save(organization_id, form_id)
        except FormsAPIError:  # gone meanwhile, or the organization's summaries busy
            continue
        except Exception:  # the next forms are still warmed
            log.warning("summaries: form %s was not warmed", form_id, exc_info=True)
    # The files of forms not warmed go, and those no process keeps up to date:
    # what a delete removed outlives it on disk by a round, or three at most.
    warmed = {(organization_id, form_id) for organization_id, form_id, *_ in largest}
    await held.HELD.sweep(warmed, unkept=3 * WARM_EVERY)
    return read


async def _warm_one(
    sessionmaker: Callable[[], ReadSession],
    organization_id: str,
    form_id: str,
    submissions: int,
    seq: int,
) -> bool:
    # In the organization's turn: an ask of it may be catching the copy up.
    # Past the catch-up's pages the copy is dropped, and read again below.
    async with TURNS.turn(organization_id):
        if held.HELD.holds(organization_id, form_id):
            async with sessionmaker() as session:
                await held.HELD.catch_up(session, organization_id, form_id, seq)
            if held.HELD.holds(organization_id, form_id):
                return False
    await held.HELD.settled()  # one read at a time: an ask's goes first
    if not held.HELD.may_fit(submissions):
        return False
    async with sessionmaker() as session:  # the read takes its engine for a session of its own
        form = await form_service.get(session, organization_id, form_id)
        started = _read_soon(session, form, _current(form), warming=True)
    await held.HELD.settled()
    return started and held.HELD.holds(organization_id, form_id)


async def keep_warm(sessionmaker: Callable[[], ReadSession], least: int) -> None:
    """warm() now and every WARM_EVERY seconds, for as long as the process serves:
    a form that reaches `least` submissions, or that was dropped, is read
    again. A failure (the database away for a moment) waits for the next round."""
    while True:
        try:
            await warm(sessionmaker, least)
        except Exception:
            log.exception("summaries: warming the largest forms failed; trying again next round")
        await asyncio.sleep(WARM_EVERY)


async def _held_tallies(
    session: ReadSession, form: Form, shown: Compiled, seq: int, filters: Filters
) -> figures.Tallies | None:
    """The filtered tallies from the form's submissions held in memory
    (summary.held); None where the database must count them."""
    rows = await held.HELD.rows(
        session, form.organization_id, form.id, seq, shown.counted, _hidden_keys(shown)
    )
    if rows is None:
        return None
    # A hidden field's filter is a text answer's.
    named = [AnswerIs(*filters.hidden)] if filters.hidden is not None else []
    named += [filters.answer] if filters.answer is not None else []
    masks = [rows.matching(answer.key, _accepts(answer)) for answer in named]
    kept = [mask for mask in masks if mask is not None]
    return await rows.count(filters, kept) if len(kept) == len(masks) else None


def _hidden_keys(form: Compiled) -> frozenset[str]:
    return frozenset(field.key for field in form.definition.hidden_fields)


def _accepts(answer: AnswerIs) -> Callable[[Any], bool]:
    """Whether a decoded answer is one `answer` names, as the database's
    filter takes it (repository._conditions)."""
    wanted = answer.value
    if answer.includes:
        return lambda value: isinstance(value, str) and f",{wanted}," in f",{value},"
    if isinstance(wanted, str):
        return lambda value: value == wanted
    # 5 is 5.0; true is not 1.
    return lambda value: (
        isinstance(value, int | float) and not isinstance(value, bool) and value == wanted
    )


async def _version(session: ReadSession, form: Form, version: int | None) -> Compiled:
    if version is None or version == form.version:
        return _current(form)
    found = await form_service.compiled_version(session, form.organization_id, form.id, version)
    if found is None:
        raise NotFound(f"Form '{form.id}' has no version {version}; it is at {form.version}.")
    return found


def _split(name: str, text: str) -> tuple[str, str]:
    key, colon, value = text.partition(":")
    if not colon or not key:
        raise BadRequest(f"`{name}` is a key, a colon and a value, such as `{name}=plan:business`.")
    if "\x00" in value:
        raise BadRequest(f"`{name}`'s value holds a NUL character, which no answer holds.")
    if len(value) > FILTER_MAX:
        raise BadRequest(f"`{name}`'s value is longer than {FILTER_MAX} characters.")
    return key, value


def _hidden(form: Compiled, text: str) -> tuple[str, str]:
    key, value = _split("hidden", text)
    keys = [field.key for field in form.definition.hidden_fields]
    if key not in keys:
        raise BadRequest(
            f"The form has no hidden field '{key[:64]}'"
            + (f"; it has: {', '.join(keys)}." if keys else ".")
        )
    return key, value


def _answer(form: Compiled, text: str) -> AnswerIs:
    """The answer filter, its value checked against the question it names."""
    key, value = _split("answer", text)
    parts = {part_key: (q, part) for q in questions(form.blocks) for part_key, part in q.parts()}
    if key not in parts:
        raise BadRequest(f"The form has no question '{key[:64]}'.")
    question, part = parts[key]
    if isinstance(part, OtherText):
        raise BadRequest(f"'{key}' is an Other text: filter by its choice, '{OTHER}'.")
    if isinstance(question, Matrix):
        columns = [column.value for column in question.columns]
        return AnswerIs(key, _one_of(key, value, columns))
    if isinstance(question, MultipleChoice):
        return AnswerIs(key, _one_of(key, value, question.values()), includes=True)
    if isinstance(question, SingleChoice | Dropdown):
        return AnswerIs(key, _one_of(key, value, question.values()))
    if isinstance(question, YesNo):
        return AnswerIs(key, _one_of(key, value, ["yes", "no"]))
    if isinstance(question, Rating | Scale | Nps | Number):
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if number != number or number in (float("inf"), float("-inf")):
            raise BadRequest(f"'{key}' is answered with a number; '{value[:64]}' is not one.")
        if abs(number) > LARGEST_NUMBER:
            raise BadRequest(
                f"'{key}' is answered with a number of at most {LARGEST_NUMBER} either side "
                f"of 0; '{value[:64]}' is beyond it."
            )
        return AnswerIs(key, int(number) if number.is_integer() else number)
    if isinstance(question, Ranking):
        raise BadRequest(f"'{key}' is a ranking: filter by a choice, a scale or a number.")
    raise BadRequest(
        f"'{key}' is answered with free text: filter by a choice, yes/no, a rating, "
        "a scale or a number."
    )


def _one_of(key: str, value: str, values: list[str]) -> str:
    if value not in values:
        raise BadRequest(f"'{key}' has no choice '{value[:64]}'; it has: {', '.join(values)}.")
    return value


# Questions a time series follows: counts per option, or a mean.
_CHOSEN = (SingleChoice, Dropdown, MultipleChoice, YesNo)
_AVERAGED = (Rating, Scale, Nps, Number)


async def timeseries(
    session: ReadSession,
    organization_id: str,
    form_id: str,
    *,
    interval: buckets.Interval = "day",
    time_zone: str = "UTC",
    since: datetime | None = None,
    until: datetime | None = None,
    question: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """Submissions per hour, day, week or month of a time zone, every bucket
    present; with `question`, its answers in each: counts per option, or
    how many answered and their mean."""
    form = await form_service.get(session, organization_id, form_id)
    shown = await _version(session, form, version)
    try:
        zone = ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadRequest(
            f"'{time_zone[:64]}' is not a time zone: name one of the IANA database's, "
            "such as Europe/Paris or UTC."
        ) from None
    for name, moment in (("since", since), ("until", until)):
        if moment is not None and not buckets.EARLIEST <= moment <= buckets.LATEST:
            raise BadRequest(f"`{name}` must fall between the years 1970 and 9000.")
    until = until or utcnow()
    since = since or until - buckets.DEFAULT_SPAN[interval]
    if until <= since:
        raise BadRequest("`until` must be later than `since`: the range holds no moment.")
    followed = _followed(shown, question) if question is not None else None
    try:
        bounds = buckets.boundaries(since, until, interval, zone)
    except ValueError:
        raise BadRequest(
            f"The range holds more than {buckets.MAX_BUCKETS} {interval}s: "
            "narrow it or choose a longer interval."
        ) from None
    keys = [followed.key] if followed is not None else []
    found = await repository.series(
        session, organization_id, form.id, bounds, keys, shown.counted, version
    )
    return {
        "formId": form.id,
        "interval": interval,
        "timeZone": time_zone,
        "question": None
        if followed is None
        else {"key": followed.key, "type": followed.type, "title": followed.title},
        "buckets": [
            {
                "start": start.astimezone(zone).isoformat(),
                "end": end.astimezone(zone).isoformat(),
                "submissions": tallies.submissions,
                **({} if followed is None else _followed_figures(followed, tallies)),
            }
            for start, end, tallies in zip(bounds, bounds[1:], found, strict=False)
        ],
    }


def _followed(form: Compiled, key: str) -> Any:
    question = next((q for q in questions(form.blocks) if q.key == key), None)
    if question is None:
        raise BadRequest(f"The form has no question '{key[:64]}'.")
    if not isinstance(question, _CHOSEN + _AVERAGED):
        raise BadRequest(
            f"'{key}' is not followed over time: choose a choice, yes/no, rating, scale, "
            "NPS or number question."
        )
    return question


def _followed_figures(question: Any, tallies: figures.Tallies) -> dict[str, Any]:
    whole = figures.summarize([question], Definition(), tallies)["questions"][0]
    if isinstance(question, _CHOSEN):
        return {"answered": whole["answered"], "options": whole["options"]}
    return {"answered": whole["answered"], "mean": whole["mean"]}
