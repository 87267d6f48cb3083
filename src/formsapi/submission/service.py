"""Reading submissions of one form, most recent first."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import (
    FormNotFound,
    FormsAPIError,
    NotFound,
    ValidationFailed,
)
from formsapi.event import service as event_service
from formsapi.file import service as file_service
from formsapi.form import limits
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.idempotency import service as idempotency_service
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import compiled
from formsapi.language.blocks import Block
from formsapi.models import EventType, FormStatus, Submission
from formsapi.submission import repository
from formsapi.submission.repository import PageRow, hour_of
from formsapi.submission.schemas import change_wire, deleted_wire, detail_wire, wire
from formsapi.submission.validation import Checked, answer_pointer, validate_submission

# From this offset on, the page is found through the hourly counts: skipping
# rows one by one costs as much as the offset is deep.
SEEK_FROM = 500


async def page_document(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    page: PageParams,
    since: datetime | None,
) -> bytes:
    """The JSON body of one page with its exact total: one query for shallow
    pages with rows, two for deep ones.

    Measured on PostgreSQL, returning rows and encoding here with orjson costs
    the machine less than having the database build the JSON (bench/RESULTS.md)."""
    rows: Sequence[PageRow] = ()
    offset, before, past_the_end = page.offset, None, False
    if offset >= SEEK_FROM:
        found = await repository.seek(session, organization_id, form_id, since, offset)
        if found is None:
            past_the_end = True
        else:
            before, newer = found
            offset -= newer
    if not past_the_end:
        rows = await repository.list_page(
            session, organization_id, form_id, since, offset, page.limit, before
        )
    if rows:
        *_, total = rows[0]
    else:
        # An empty page: tell a missing form (404) from one with fewer rows.
        await form_service.get(session, organization_id, form_id)
        total = await repository.total(session, organization_id, form_id, since)
    return orjson.dumps(
        {
            "data": [
                wire(id_, form_id_, version, submitted_at, orjson.Fragment(answers))
                for id_, form_id_, version, submitted_at, answers, _ in rows
            ],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


class CursorExpired(FormsAPIError):
    """The change feed cannot continue from this `after`: tombstones of
    submissions deleted after it have been purged (they are kept
    FORMSAPI_TOMBSTONE_DAYS, 30 by default), so your copy could keep rows
    that are gone; or `after` is past the form's latest change (the database
    was restored from a backup, or the number is another form's). Copy the
    form again from `after=0` (or an export), replacing what you hold."""

    status = 410
    title = "Cursor expired"
    slug = "cursor-expired"


MAX_CHANGES = 1000


async def changes_document(
    session: AsyncSession, organization_id: str, form_id: str, after: int, limit: int
) -> bytes:
    """The JSON body of one page of the form's change feed.

    The rows are read before the form's position: a purge that commits
    between the two is seen by the second, so a page never silently lacks a
    purged tombstone."""
    if not is_plausible(form_id):
        raise FormNotFound(form_id)
    page, more = await repository.changes_after(session, organization_id, form_id, after, limit)
    position = await repository.positions(session, organization_id, form_id)
    if position is None:
        raise FormNotFound(form_id)
    latest, horizon = position
    if 0 < after < horizon:
        raise CursorExpired(
            f"Deletes up to change {horizon} are no longer kept and you asked for the changes "
            f"after {after}: copy the form again from after=0.",
            tombstoneHorizon=horizon,
        )
    if after > latest:
        raise CursorExpired(
            f"The form's latest change is {latest}, before your after={after}: this copy "
            "came from elsewhere (a restored database?). Copy the form again from after=0.",
            changeSeq=latest,
        )
    data = [change_wire(form_id, row) for row in page]
    last = page[-1][repository.ROW_CHANGE_SEQ] if page else after
    return orjson.dumps({"data": data, "next": last, "hasMore": more})


class SubmissionNotFound(NotFound):
    def __init__(self, submission_id: str) -> None:
        super().__init__(f"No submission with id '{submission_id}' in this form.")


@dataclass(frozen=True, slots=True)
class Checking:
    """A post's answers checked against one version of its form, and
    encoded as they will be stored: work done before the form's lock."""

    form: compiled.Compiled
    checked: Checked
    answers_json: bytes | None  # None: they cannot be stored as JSON
    files: dict[str, str]  # the uploads they name: file id to question key
    language: str  # the respondent's, one of the form's
    language_error: str | None = None

    @property
    def valid(self) -> bool:
        return not self.checked.errors and self.answers_json is not None and not self.language_error

    def failure(self) -> ValidationFailed:
        errors = [e.as_dict() for e in self.checked.errors]
        if self.language_error:
            errors.append({"pointer": "/language", "detail": self.language_error})
        if self.answers_json is None:
            errors.append(
                {
                    "pointer": "/answers",
                    "detail": "must be storable as JSON: text without unpaired surrogates "
                    "and integers within 64 bits",
                }
            )
        return ValidationFailed("The answers are invalid.", errors)


def check(
    form: compiled.Compiled, answers: dict[str, Any], today: date, language: str | None = None
) -> Checking:
    checked = validate_submission(form, answers, today)
    try:
        encoded = orjson.dumps(checked.stored)
    except orjson.JSONEncodeError:
        encoded = None
    files = file_service.answered_files(form.blocks, checked.stored)
    if language is None or language in form.languages:
        return Checking(form, checked, encoded, files, language or form.definition.language)
    offered = ", ".join(form.languages)
    problem = f"must be one of the form's languages: {offered}"
    return Checking(form, checked, encoded, files, language, problem)


@dataclass(frozen=True, slots=True)
class Accepted:
    """A stored submission: what the API answers (`body`, JSON) and what the
    hosted page shows next."""

    id: str
    answers: dict[str, Any]
    ending: str | None
    body: bytes


# Where a new submission's time and change number go in its JSON, in order:
# only fields of ours (ids, versions) come before them, never an answer.
_PLACES = ((b'"submittedAt":"', b"@"), (b'"updatedAt":"', b"@"), (b'"changeSeq":', b"0"))
_THIN_PLACES = ((b'"changeSeq":', b"0"),)


def _around(encoded: bytes, places: tuple[tuple[bytes, bytes], ...]) -> tuple[bytes, ...]:
    """`encoded` cut at each place's stand-in value."""
    parts, start = [], 0
    for name, stand_in in places:
        at = encoded.index(name + stand_in, start) + len(name)
        parts.append(encoded[start:at])
        start = at + len(stand_in)
    return (*parts, encoded[start:])


@dataclass(frozen=True, slots=True)
class Unnumbered:
    """A new submission before its time and change number are known: its
    JSON, as the API answers it and as a thin event carries it, kept in
    parts around them, so that the statement that writes a batch under the
    form's lock can put them in (submission/repository, `created_statement`),
    and the API answer with the same."""

    id: str
    event_id: str
    answers: dict[str, Any]  # as stored
    answers_json: str
    ending: str | None
    language: str
    body: tuple[bytes, bytes, bytes, bytes]  # around submittedAt, updatedAt, changeSeq
    # event_service.encoded_text's thin form, around changeSeq: for the
    # statement, which chooses between the two as encoded_text does.
    thin: tuple[bytes, bytes]

    def accepted(self, change_seq: int, at: str) -> Accepted:
        return Accepted(self.id, self.answers, self.ending, self._body(change_seq, at))

    def _body(self, change_seq: int, at: str) -> bytes:
        time, number = at.encode(), str(change_seq).encode()
        head, between, before_number, tail = self.body
        return head + time + between + time + before_number + number + tail


def new_unnumbered(form_id: str, version: int, checking: Checking) -> Unnumbered:
    assert checking.answers_json is not None, "only valid answers are stored"
    submission_id = new_id("sub")
    ending = checking.checked.ending
    body = orjson.dumps(
        detail_wire(
            submission_id,
            form_id,
            version,
            "@",
            "@",
            1,
            0,
            orjson.Fragment(checking.answers_json),
            ending,
            checking.language,
        )
    )
    thin = orjson.dumps({**_thin(submission_id, form_id, 1, 0), "thin": True})
    head, between, before_number, tail = _around(body, _PLACES)
    before, after = _around(thin, _THIN_PLACES)
    return Unnumbered(
        submission_id,
        new_id("evt"),
        checking.checked.stored,
        checking.answers_json.decode(),
        ending,
        checking.language,
        (head, between, before_number, tail),
        (before, after),
    )


def new_submission(
    organization_id: str,
    form_id: str,
    version: int,
    change_seq: int,
    now: datetime,
    checking: Checking,
) -> tuple[dict[str, Any], Accepted]:
    """The parameters that write a new submission with its event
    (event_service.write along repository.new_row), and the submission."""
    new = new_unnumbered(form_id, version, checking)
    accepted = new.accepted(change_seq, isoformat_z(now))
    thin = _thin(new.id, form_id, 1, change_seq)
    event = event_service.parameters(
        organization_id,
        EventType.submission_created,
        now,
        event_service.encoded_text(accepted.body, thin),
        form_id,
        new.id,
        new.event_id,
    )
    row = {
        "id": new.id,
        "form_version": version,
        "submitted_at": now,
        "answers": new.answers_json,
        "change_seq": change_seq,
        "ending": new.ending,
        "language": new.language,
    }
    return event | row, accepted


async def not_accepting(
    session: AsyncSession, organization_id: str, form_id: str
) -> Exception | None:
    """Why the form took no submission: missing (404), not published, not
    open yet or closed by its schedule or limit (409); None when it is due
    to open (form/limits.py: its opening time has come, the sweep not run)."""
    try:
        form = await form_service.get(session, organization_id, form_id)
    except FormNotFound as missing:
        return missing
    now = utcnow()
    if form.status == FormStatus.closed and limits.state(form, now) == limits.State.open:
        return None
    return limits.refusal(form, now)


def location(form_id: str, submission_id: str) -> str:
    return f"/v1/forms/{form_id}/submissions/{submission_id}"


async def queue_for(session: AsyncSession, form_id: str) -> None:
    """Start a transaction that writes the form's submissions (an edit, a
    delete) by waiting for the form's turn, before anything else it writes
    (an Idempotency-Key's claim): the events list is ordered by the
    transactions' ids, which the form's writers then take in the order they
    number their changes."""
    if is_plausible(form_id):
        await form_repository.queue(session, form_id)


def _postgres(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _thin(submission_id: str, form_id: str, version: int, change_seq: int) -> dict[str, Any]:
    return {
        "id": submission_id,
        "formId": form_id,
        "version": version,
        "changeSeq": change_seq,
        "url": location(form_id, submission_id),
    }


def event_data(submission: Submission) -> str:
    """A submission as its events carry it: as the API returns it, or thin."""
    return event_service.data_text(
        to_dict(submission),
        _thin(submission.id, submission.form_id, submission.version, submission.change_seq),
    )


async def recent(
    session: AsyncSession, organization_id: str, form_id: str, limit: int
) -> Sequence[Submission]:
    """The newest submissions of one form, newest first."""
    return await repository.recent(session, organization_id, form_id, limit)


async def get(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> Submission:
    found = None
    if is_plausible(form_id) and is_plausible(submission_id):
        found = await repository.get(session, organization_id, form_id, submission_id)
    if found is None:
        await form_service.get(session, organization_id, form_id)  # a missing form says so
        raise SubmissionNotFound(submission_id)
    return found


async def delete(
    session: AsyncSession, organization_id: str, form_id: str, submission_id: str
) -> None:
    """Delete one submission (delete_many), or say there is none."""
    if not (is_plausible(form_id) and is_plausible(submission_id)):
        raise SubmissionNotFound(submission_id)
    if not await delete_many(session, organization_id, form_id, [submission_id]):
        raise SubmissionNotFound(submission_id)


async def delete_many(
    session: AsyncSession, organization_id: str, form_id: str, submission_ids: Sequence[str]
) -> int:
    """Delete these submissions of the form (those still there), each as a
    delete of its own: taken off every total exactly once, its files
    deleted, a tombstone with its own change number in the feed, a
    `submission.deleted` event, and its answers erased from its earlier
    events and from the response an Idempotency-Key replays. How many went.
    The API's delete, the retention sweep and the erasure by person all come
    here.

    The form's row lock comes first, so concurrent deletes of the same
    submission (and a delete of the form) are ordered: whichever finds the
    row already gone leaves it out."""
    if not is_plausible(form_id):
        raise FormNotFound(form_id)
    await queue_for(session, form_id)
    if not await form_repository.lock(session, organization_id, form_id):
        raise FormNotFound(form_id)
    ids = [id_ for id_ in submission_ids if is_plausible(id_)]
    if not ids:
        return 0
    await file_service.release(session, organization_id, form_id, ids)
    deleted = await repository.delete_rows(session, organization_id, form_id, ids)
    if not deleted:
        return 0
    last = await form_repository.next_change(
        session, organization_id, form_id, -len(deleted), changes=len(deleted)
    )
    assert last is not None, "the form is locked"
    numbered = [(d.id, last - len(deleted) + 1 + n) for n, d in enumerate(deleted)]
    hours = Counter(hour_of(d.submitted_at) for d in deleted)
    await repository.add_counts(
        session, organization_id, form_id, {h: -n for h, n in hours.items()}
    )
    # Answer counts are kept per version and hour: one change for each.
    taken: dict[tuple[int, datetime], repository.Tally] = {}
    for d in deleted:
        answered = await _version(session, organization_id, form_id, d.form_version)
        tally = repository.tally(answered.counted, d.answers, d.ending)
        taken.setdefault((d.form_version, hour_of(d.submitted_at)), Counter()).update(tally)
    for (version, hour), tally in taken.items():
        minus = Counter({pair: -n for pair, n in tally.items()})  # (unary minus drops them)
        await repository.add_tally(session, organization_id, form_id, version, hour, minus)
        keys = {key for key, _ in tally}
        await repository.drop_emptied(session, organization_id, form_id, version, hour, keys)
    now = utcnow()
    at = isoformat_z(now)
    await repository.bury(session, organization_id, form_id, numbered, now)
    await event_service.erase_answers(session, organization_id, form_id, [d.id for d in deleted])
    locations = [location(form_id, d.id) for d in deleted]
    await idempotency_service.redact_created(session, organization_id, locations)
    events = [
        event_service.parameters(
            organization_id,
            EventType.submission_deleted,
            now,
            event_service.data_text(
                {"formId": form_id, **deleted_wire(id_, change_seq, at)}, {"id": id_}
            ),
            form_id,
            id_,
        )
        for id_, change_seq in numbered
    ]
    await event_service.write(session, events)
    return len(deleted)


class StaleSubmission(FormsAPIError):
    """`If-Match` named a version of the submission that is no longer its
    latest: someone changed it since you read it. Read it again (its `ETag`
    is its `version`, quoted), then decide whether to send your change."""

    status = 412
    title = "Precondition Failed"
    slug = "stale-submission"


def etag(version: int) -> str:
    return f'"{version}"'


def _matches(if_match: str, version: int) -> bool:
    """RFC 9110 If-Match: `*`, or a list of entity tags one of which is this
    version's (weak tags never match a strong comparison)."""
    tags = [tag.strip() for tag in if_match.split(",")]
    return "*" in tags or etag(version) in tags


async def edit(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    submission_id: str,
    changes: dict[str, object],
    if_match: str | None,
) -> Submission:
    """Correct a submission's answers: a JSON merge patch (RFC 7396) of its
    answers, where null removes one, checked like a new submission against
    the form version it answered. One more version, a new change number.

    The form's row lock comes first, as for every write to its submissions,
    so the version `If-Match` is compared with cannot change before commit.
    An edit that changes nothing (its answers, nor the ending they reach)
    takes no change number: a form's `changeSeq` moves only when its feed
    has something new."""
    if not (is_plausible(form_id) and is_plausible(submission_id)):
        raise SubmissionNotFound(submission_id)
    if not await form_repository.lock(session, organization_id, form_id):
        raise FormNotFound(form_id)
    submission = await repository.get(session, organization_id, form_id, submission_id)
    if submission is None:
        raise SubmissionNotFound(submission_id)
    if if_match is not None and not _matches(if_match, submission.version):
        raise StaleSubmission(
            f"The submission is at version {submission.version}; If-Match said {if_match}.",
            headers={"ETag": etag(submission.version)},
        )
    # Variables are the server's: recomputed from the answers as corrected.
    kept = {k: v for k, v in submission.answers.items() if not k.startswith("vars.")}
    answers = {**kept, **changes}
    answers = {key: value for key, value in answers.items() if value is not None}
    answered = await _version(session, organization_id, form_id, submission.form_version)
    checked = validate_submission(answered, answers, utcnow().date())
    if checked.errors:
        raise ValidationFailed("The answers are invalid.", [e.as_dict() for e in checked.errors])
    stored = checked.stored
    before = repository.tally(answered.counted, submission.answers, submission.ending)
    # The same answers can reach another ending (logic reading today's date).
    if stored != submission.answers or checked.ending != submission.ending:
        submission.ending = checked.ending
        change = repository.tally(answered.counted, stored, checked.ending)
        change.subtract(before)
        await repository.add_tally(
            session,
            organization_id,
            form_id,
            submission.form_version,
            submission.submitted_at,
            change,
        )
        await _refile(session, organization_id, form_id, submission, answered.blocks, stored)
        change_seq = await form_repository.next_change(session, organization_id, form_id)
        assert change_seq is not None, "the form is locked"
        now = utcnow()
        await repository.edit(session, submission, stored, change_seq, now)
        event = event_service.parameters(
            organization_id,
            EventType.submission_updated,
            now,
            event_data(submission),
            form_id,
            submission.id,
        )
        await event_service.write(session, [event])
    return submission


async def _version(
    session: AsyncSession, organization_id: str, form_id: str, version: int
) -> compiled.Compiled:
    """The version of the form a submission answered, compiled."""
    answered = await form_service.compiled_version(session, organization_id, form_id, version)
    assert answered is not None, "every version a submission answered is kept"
    return answered


async def recount_answers(session: AsyncSession, organization_id: str) -> None:
    """Count the organization's answers again from its rows (the answer
    counts summaries add up): after a bulk load, or the migration that began
    them. Each form's rows are counted by the version they answered; its
    writers wait meanwhile."""
    await form_repository.lock_all(session, organization_id)
    counted = {
        (v.form_id, v.version): compiled.compile_version(
            organization_id, v.form_id, v.version, v.blocks, v.definition
        ).counted
        for v in await form_repository.versions_of_organization(session, organization_id)
    }
    await repository.rebuild_tallies(session, organization_id, counted)


async def _refile(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    submission: Submission,
    blocks: list[Block],
    answers: dict[str, Any],
) -> None:
    """An edit's files: those it names anew are taken (as by a new
    submission), those it no longer names are deleted."""
    had = file_service.answered_files(blocks, submission.answers)
    has = file_service.answered_files(blocks, answers)
    added = dict.fromkeys(has.keys() - had.keys(), submission.id)
    if added and (wrong := await file_service.take(session, organization_id, form_id, added, has)):
        keys = sorted({has[file_id] for file_id in wrong})
        raise ValidationFailed("The answers are invalid.", [file_error(k) for k in keys])
    if dropped := had.keys() - has.keys():
        await file_service.release(session, organization_id, form_id, [submission.id], dropped)


def file_error(key: str) -> dict[str, str]:
    return {
        "pointer": answer_pointer(key),
        "detail": "names a file that was not uploaded to this question of this form, "
        "or that another submission has, or that has expired",
    }


def to_dict(submission: Submission) -> dict[str, Any]:
    submitted_at = isoformat_z(submission.submitted_at)
    return detail_wire(
        submission.id,
        submission.form_id,
        submission.form_version,
        submitted_at,
        isoformat_z(submission.updated_at) if submission.updated_at else submitted_at,
        submission.version,
        submission.change_seq,
        submission.answers,
        submission.ending,
        submission.language,
    )
