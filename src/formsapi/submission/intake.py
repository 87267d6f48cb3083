"""Posts to one form, written together (group commit).

A form that goes viral receives its submissions all at once, and every
write to a form's submissions takes the form's lock until commit. With a
transaction of its own for each post, that lock was the limit
(bench/RESULTS.md). Here, the posts to one form that arrive while its
previous batch is being written wait for the next: one transaction, under
one lock, numbers them all and writes them (rows, events, counts, and the
outcomes of their Idempotency-Keys), and each post is answered only once
that transaction has committed. Answers are checked and encoded before,
outside the lock; a post whose answers are invalid leaves nothing, and its
neighbours are written all the same.

What must hold exactly under racing posts is decided under that lock too:
a partial response completed once, an Idempotency-Key claimed once, a file
given to one submission, an invitation link spent once, and, for a form
taking one response per email address, each address taken once (forms
with that rule leave the one-statement write below).

Each process batches its own posts; processes take turns on the form's
lock, in commit order. On PostgreSQL a batch of posts without a partial,
invitation or file, keyed or not, is written by one statement
(submission/repository/created.py), which claims their keys too:
every round trip made under the lock is time no other batch can write, and
the lock, not the CPU, had been the limit.
"""

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.admission import repository as admission_repository
from formsapi.admission import service as admission_service
from formsapi.admission.service import (
    AlreadyAnswered,
    Digests,
    InvitationUsed,
    SecretKeyNeeded,
)
from formsapi.db.session import ReadSession, WriteSession
from formsapi.errors import Conflict, FormNotFound, ValidationFailed
from formsapi.event import service as event_service
from formsapi.file import service as file_service
from formsapi.form import limits
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.form.limits import QuotaFull, Reason
from formsapi.form.work import WAITING_UNITS, worked_out
from formsapi.funnel import repository as funnel_repository
from formsapi.funnel import service as funnel_service
from formsapi.funnel.steps import Completion
from formsapi.idempotency import repository as idempotency_repository
from formsapi.idempotency.service import RETENTION, Outcome, kept
from formsapi.kit.fair import FairShare
from formsapi.kit.ids import is_plausible
from formsapi.kit.secretbox import SecretBox
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import compiled
from formsapi.language.cost import COMPILE_UNITS
from formsapi.partial import repository as partial_repository
from formsapi.partial.service import LinkUsed
from formsapi.submission import repository
from formsapi.submission.repository import hour_of
from formsapi.submission.service import (
    Accepted,
    Checking,
    check,
    file_error,
    location,
    new_submission,
    new_unnumbered,
    not_accepting,
)
from formsapi.submission.validation import answer_pointer

# Posts in one transaction at most: its statements stay a bounded size.
MAX_BATCH = 200
# Times a batch meets a version of its form it has not checked against,
# one after the other, before its posts are failed.
MAX_VERSIONS = 3


@dataclass(frozen=True, slots=True)
class Claim:
    """An Idempotency-Key and the fingerprint of the request it came with."""

    key: str
    fingerprint: str


@dataclass(eq=False, slots=True)
class _Post:
    answers: dict[str, Any]
    claim: Claim | None
    checking: Checking | None
    # The hash of the resume token of the partial response it completes.
    partial: bytes | None
    language: str | None  # the respondent's; None: the form's own
    # What a post from the hosted page adds to the form's funnel; None from the API.
    funnel: Completion | None
    # The hash of the invitation link's token it spends (admission/).
    invitation: bytes | None = None
    # The stored submission; None when another request with its key was
    # stored first (its outcome is then replayed).
    done: asyncio.Future[Accepted | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Intake:
    """The batches of this process, one writer at a time for each form."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[WriteSession],
        read_sessionmaker: async_sessionmaker[ReadSession],
        secret_box: SecretBox | None = None,
        fair_share: FairShare | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        # Where costly forms' answers are checked (form/work.py).
        self._fair_share = fair_share or FairShare(WAITING_UNITS)
        self._digests = None if secret_box is None else Digests(secret_box)
        # Forms found taking one response per email address: their batches
        # go the general way at once (the one statement would refuse them).
        self._by_email: set[tuple[str, str]] = set()
        self._read_sessionmaker = read_sessionmaker
        self._postgres = sessionmaker.kw["bind"].dialect.name == "postgresql"
        self._waiting: dict[tuple[str, str], list[_Post]] = {}
        self._writers: dict[tuple[str, str], asyncio.Task[None]] = {}
        # Forms found with quotas when last written here: their posts take the
        # general path at once (the one statement writes none of them). A
        # guess only: the statement itself refuses a form that has quotas.
        self._quoted: set[tuple[str, str]] = set()

    async def submit(
        self,
        organization_id: str,
        form_id: str,
        answers: dict[str, Any],
        partial: bytes | None = None,
        language: str | None = None,
        funnel: Completion | None = None,
        invitation: bytes | None = None,
    ) -> Accepted:
        """Store answers to a published form, once its batch has committed;
        with `partial`, the partial response they complete is closed in the
        same transaction (LinkUsed when it was completed already); with
        `funnel` (a post from the hosted page), its completion is counted in
        the form's funnel in that transaction too; with `invitation`, that
        link is spent in it (InvitationUsed when it was, or is revoked).
        A form taking one response per email address refuses a second from
        one address (AlreadyAnswered), however the posts race."""
        accepted = await self._queue(
            organization_id, form_id, answers, None, partial, language, funnel, invitation
        )
        assert accepted is not None, "only a post with a key is answered by another"
        return accepted

    async def submit_once(
        self,
        organization_id: str,
        form_id: str,
        answers: dict[str, Any],
        claim: Claim,
        language: str | None = None,
    ) -> Outcome:
        """`submit` for a post with an Idempotency-Key: the first time, or
        the outcome kept for the key (idempotency/service.py says how)."""
        kept = await self._kept(organization_id, claim)
        if kept is not None:
            return kept
        accepted = await self._queue(organization_id, form_id, answers, claim, None, language)
        if accepted is None:
            kept = await self._kept(organization_id, claim)
            if kept is None:  # taken by a request to another path, still running
                raise Conflict("A request with this Idempotency-Key is in progress.")
            return kept
        return Outcome(201, accepted.body, location(form_id, accepted.id))

    async def close(self) -> None:
        """Let the batches under way finish (at shutdown)."""
        while self._writers:
            await asyncio.gather(*self._writers.values(), return_exceptions=True)

    async def _check(
        self,
        organization_id: str,
        form: compiled.Compiled,
        answers: dict[str, Any],
        language: str | None,
    ) -> Checking:
        today = utcnow().date()
        return await worked_out(
            self._fair_share,
            organization_id,
            form.cost.walk,
            partial(check, form, answers, today, language),
        )

    async def _kept(self, organization_id: str, claim: Claim) -> Outcome | None:
        async with self._read_sessionmaker() as session:
            return await kept(session, organization_id, claim.key, claim.fingerprint, utcnow())

    async def _queue(
        self,
        organization_id: str,
        form_id: str,
        answers: dict[str, Any],
        claim: Claim | None,
        partial: bytes | None,
        language: str | None,
        funnel: Completion | None = None,
        invitation: bytes | None = None,
    ) -> Accepted | None:
        if not is_plausible(form_id):
            raise FormNotFound(form_id)
        form = compiled.cached(organization_id, form_id)
        checking = None
        if form is not None:
            checking = await self._check(organization_id, form, answers, language)
        post = _Post(answers, claim, checking, partial, language, funnel, invitation)
        key = (organization_id, form_id)
        self._waiting.setdefault(key, []).append(post)
        if key not in self._writers:
            self._writers[key] = asyncio.create_task(self._drain(key))
        # A client that leaves does not take its post out of a batch being
        # written: like a post whose commit was under way when it left.
        return await asyncio.shield(post.done)

    async def _drain(self, key: tuple[str, str]) -> None:
        try:
            while waiting := self._waiting.get(key):
                batch = _next_batch(waiting)
                try:
                    await self._write(*key, batch)
                except Exception as error:
                    for post in batch:
                        if not post.done.done():
                            post.done.set_exception(error)
        finally:
            # No await between the last look at the queue and here: a post
            # queued meanwhile would find a writer that is about to stop.
            self._waiting.pop(key, None)
            del self._writers[key]

    async def _write(self, organization_id: str, form_id: str, batch: list[_Post]) -> None:
        # The version the posts were checked against is confirmed under the
        # lock; if the form changed (or this process had not compiled it),
        # the transaction is given up, the form compiled and the posts
        # checked again. A key found taken gives the transaction up too, and
        # its post is answered with the outcome kept for it.
        versions = 0
        opened = False
        key = (organization_id, form_id)
        at_once = self._postgres and key not in self._quoted and key not in self._by_email
        while batch:
            form = compiled.cached(organization_id, form_id)
            if form is not None:
                for post in batch:
                    if post.checking is None or post.checking.form is not form:
                        post.checking = await self._check(
                            organization_id, form, post.answers, post.language
                        )
            accepted = [p for p in batch if p.checking is not None and p.checking.valid]
            answers_tally = _tally(accepted)
            if at_once and form is not None and accepted and all(map(_plain, accepted)):
                answered = await self._write_at_once(
                    organization_id, form_id, form.version, accepted, answers_tally
                )
                if answered is not None:
                    _answer(batch, answered)
                    return
                at_once = False  # the form changed, or a key was held: the way below finds out
                continue
            async with self._sessionmaker() as session:
                locked = await form_repository.lock_for_submission(
                    session, organization_id, form_id, len(accepted)
                )
                if locked is None:
                    await session.rollback()
                    # Why not, read without the write session (SQLite's write lock).
                    async with self._read_sessionmaker() as reader:
                        why = await not_accepting(reader, organization_id, form_id)
                    if why is not None:
                        raise why
                    if opened:
                        raise Conflict("The form changed too often to take these answers.")
                    # Its opening time has come before the sweep: it opens now, once.
                    await self._settle(organization_id, form_id)
                    opened = True
                    continue
                version, last, locked_at = locked.version, locked.change_seq, locked.at
                count, most = locked.response_count, locked.max_submissions
                opens_at, closes_at, quotas = locked.opens_at, locked.closes_at, locked.quotas
                by, question = locked.one_response_by, locked.one_response_question
                if quotas:
                    self._quoted.add(key)
                else:
                    self._quoted.discard(key)
                if by == admission_service.EMAIL:
                    self._by_email.add(key)
                else:
                    self._by_email.discard(key)
                if form is None or form.version != version:
                    versions += 1
                    if versions == MAX_VERSIONS:
                        raise Conflict("The form changed too often to take these answers.")
                    blocks, definition = await form_repository.definition_of(
                        session, organization_id, form_id
                    )
                    await session.rollback()
                    # Compiled with the form's lock let go, off the loop.
                    build = partial(
                        compiled.compile_ready,
                        organization_id,
                        form_id,
                        version,
                        blocks,
                        definition,
                    )
                    await worked_out(self._fair_share, organization_id, COMPILE_UNITS, build)
                    continue
                now = locked_at or utcnow()
                # Judged by the time, not only the status: past its closing
                # time, the form closes now (its event written once, under
                # its lock) and the batch is refused.
                if (closes_at is not None and closes_at <= now) or (
                    opens_at is not None and opens_at > now
                ):
                    await session.rollback()
                    await self._settle(organization_id, form_id)
                    async with self._read_sessionmaker() as reader:
                        why = await not_accepting(reader, organization_id, form_id)
                    for post in batch:
                        if not post.done.done():
                            post.done.set_exception(why or Conflict("The form changed."))
                    return
                first = last - len(accepted) + 1
                new = [
                    new_submission(organization_id, form_id, version, first + i, now, post.checking)
                    for i, post in enumerate(accepted)
                    if post.checking is not None
                ]
                used, furthest = await _complete(session, organization_id, form_id, accepted, now)
                if used:
                    await session.rollback()
                    for post in used:
                        post.done.set_exception(LinkUsed())
                    batch = [post for post in batch if post not in used]
                    continue
                once = await self._once(
                    session, organization_id, form_id, accepted, new, now, by, question
                )
                if once:
                    await session.rollback()
                    for post, error in once.items():
                        post.done.set_exception(error)
                    batch = [post for post in batch if post not in once]
                    continue
                taken = await _claim(session, organization_id, form_id, accepted, new, now)
                if taken:
                    await session.rollback()
                    for post in taken:
                        post.done.set_result(None)
                    batch = [post for post in batch if post not in taken]
                    continue
                # The places left, once every other gate has let the posts
                # through (a post refused for its own reason takes no place):
                # posts beyond them are refused, in order.
                if most is not None and count > most:
                    room = max(most - (count - len(accepted)), 0)
                    await session.rollback()
                    over = accepted[room:]
                    for post in over:
                        post.done.set_exception(limits.closed_by(Reason.max_submissions, None))
                    batch = [post for post in batch if post not in over]
                    continue
                full = _over_quota(
                    accepted, quotas, await _taken(session, organization_id, form_id, quotas)
                )
                if full:
                    await session.rollback()
                    for post, problem in full.items():
                        post.done.set_exception(problem)
                    batch = [post for post in batch if post not in full]
                    continue
                if new:
                    rows = [parameters for parameters, _ in new]
                    await event_service.write(session, rows, repository.new_row(_postgres(session)))
                    await repository.add_counts(
                        session, organization_id, form_id, {hour_of(now): len(new)}
                    )
                    await repository.add_tally(
                        session, organization_id, form_id, version, now, answers_tally
                    )
                    await funnel_repository.add(
                        session,
                        _completed(organization_id, form_id, version, accepted, furthest).items(),
                    )
                refused = await _take_files(session, organization_id, form_id, accepted, new)
                if refused:
                    await session.rollback()
                    for post, keys in refused.items():
                        errors = [file_error(key) for key in sorted(keys)]
                        post.done.set_exception(
                            ValidationFailed("The answers are invalid.", errors)
                        )
                    batch = [post for post in batch if post not in refused]
                    continue
                if most is not None and count == most and new:
                    # The batch took the last place: the form closes with it.
                    await form_service.settle(session, organization_id, form_id, now)
                await session.commit()
            _answer(batch, dict(zip(accepted, (submission for _, submission in new), strict=True)))
            return

    async def _settle(self, organization_id: str, form_id: str) -> None:
        """Open or close the form as its schedule says, in a transaction of
        its own (form/service.py, `settle`)."""
        async with self._sessionmaker() as session:
            await form_service.settle(session, organization_id, form_id, utcnow())
            await session.commit()

    async def _once(
        self,
        session: AsyncSession,
        organization_id: str,
        form_id: str,
        accepted: Sequence[_Post],
        new: Sequence[tuple[dict[str, Any], Accepted]],
        now: Any,
        by: str | None,
        question: str | None,
    ) -> dict[_Post, Exception]:
        """The gates of a form taking one response per respondent, under its
        lock: the invitation links the batch's posts spend, and, for a form
        taking one per email address, each address marked as answered; the
        posts refused, with why (a link used or revoked, an address that
        answered before or twice in the batch, or none given)."""
        refused: dict[_Post, Exception] = {}
        posted = list(zip(accepted, (submission for _, submission in new), strict=True))
        links = {post.invitation: s.id for post, s in posted if post.invitation is not None}
        spent = await admission_repository.spend(session, organization_id, form_id, links, now)
        for post, _ in posted:
            if post.invitation is not None and post.invitation not in spent:
                refused[post] = InvitationUsed()
        if by != admission_service.EMAIL or question is None:
            return refused
        if self._digests is None:  # the key was taken away after the rule was set
            raise SecretKeyNeeded(
                "This form takes one response per email address, which needs the server's "
                "secret key: its operator must set FORMSAPI_SECRET_KEY."
            )
        digests: dict[bytes, _Post] = {}
        for post, _ in posted:
            assert post.checking is not None
            address = post.checking.checked.stored.get(question)
            if not isinstance(address, str) or not address.strip():
                refused[post] = ValidationFailed(
                    "The answers are invalid.",
                    [{"pointer": f"/answers/{question}", "detail": "is required"}],
                )
                continue
            digest = self._digests.email(form_id, address)
            if digest in digests:
                refused[post] = AlreadyAnswered()
                continue
            digests[digest] = post
        marked = await admission_repository.mark(
            session, organization_id, form_id, admission_service.EMAIL, list(digests), now
        )
        for digest, post in digests.items():
            if digest not in marked:
                refused[post] = AlreadyAnswered()
        return refused

    async def _write_at_once(
        self,
        organization_id: str,
        form_id: str,
        version: int,
        accepted: list[_Post],
        answers_tally: repository.Tally,
    ) -> dict[_Post, Accepted] | None:
        """(PostgreSQL) Write `accepted`, posts of no partial or file, in one
        statement (submission/repository/created.py); what each became, or
        None, having written nothing, if the form is no longer published at
        `version` or a post's key is held already (the general path answers
        that post with the outcome kept for it)."""
        keyed = sum(post.claim is not None for post in accepted)  # once each (_next_batch)
        new = []
        for post in accepted:
            assert post.checking is not None
            new.append(new_unnumbered(form_id, version, post.checking))
        parameters = repository.created_parameters(
            organization_id,
            form_id,
            version,
            new,
            event_service.THIN_OVER,
            answers_tally,
            _completed(organization_id, form_id, version, accepted, {}),
            [None if p.claim is None else (p.claim.key, p.claim.fingerprint) for p in accepted],
            RETENTION,
        )
        async with self._sessionmaker() as session:
            found = await event_service.write_within(
                session, repository.created_statement(keyed > 0), parameters
            )
            if found is None or found[2] < keyed:
                await session.rollback()
                return None
            if keyed and random.random() < 0.01:  # noqa: S311 - housekeeping, as _claim does
                await idempotency_repository.delete_expired(
                    session, organization_id, found[1] - RETENTION
                )
            await session.commit()
        last, at = found[0], found[1]
        time = isoformat_z(at)
        numbered = enumerate(zip(accepted, new, strict=True), int(last) - len(new) + 1)
        return {post: submission.accepted(number, time) for number, (post, submission) in numbered}


def _tally(accepted: list[_Post]) -> repository.Tally:
    """What the posts add to their form's answer counts, worked out before
    the lock. Posts checked against another version than the one found
    under the lock are checked again, and this worked out again."""
    total: repository.Tally = Counter()
    for post in accepted:
        assert post.checking is not None
        checked = post.checking.checked
        total.update(repository.tally(post.checking.form.counted, checked.stored, checked.ending))
    return total


def _completed(
    organization_id: str,
    form_id: str,
    version: int,
    accepted: list[_Post],
    furthest: dict[bytes, int],
) -> funnel_repository.Counts:
    """What the posts from the hosted page add to the form's funnel, the
    furthest page of each one's partial (closed in the transaction) known."""
    return funnel_service.completed(
        organization_id,
        form_id,
        version,
        [
            (post.funnel, furthest.get(post.partial) if post.partial is not None else None)
            for post in accepted
            if post.funnel is not None
        ],
    )


async def _taken(
    session: AsyncSession, organization_id: str, form_id: str, quotas: Any
) -> dict[tuple[str, str], int]:
    """The places the form's quotas have taken, read under its lock."""
    if not quotas:
        return {}
    keys = [limits.quota_key(quota) for quota in quotas]
    return await form_repository.places_taken(session, organization_id, form_id, keys)


def _over_quota(
    accepted: Sequence[_Post], quotas: Any, taken: dict[tuple[str, str], int]
) -> dict[_Post, Exception]:
    """The posts choosing an option with no place left, in order, once the
    places the batch's earlier posts take are counted; each with its problem
    (a 422 at the question, or QuotaFull for a quota that ends the form)."""
    if not quotas:
        return {}
    used = dict(taken)
    refused: dict[_Post, Exception] = {}
    for post in accepted:
        assert post.checking is not None
        stored = post.checking.checked.stored
        chosen = [q for q in quotas if stored.get(q["question"]) == q["option"]]
        full = [q for q in chosen if used.get(limits.quota_key(q), 0) >= q["limit"]]
        if not full:
            for quota in chosen:
                used[limits.quota_key(quota)] = used.get(limits.quota_key(quota), 0) + 1
            continue
        quota = full[0]
        if quota["action"] == "endForm":
            refused[post] = QuotaFull(
                quota.get("message") or "Thank you: we have all the answers we need.",
                question=quota["question"],
                option=quota["option"],
                message=quota.get("message"),
            )
        else:
            errors = [
                {
                    "pointer": answer_pointer(q["question"]),
                    "detail": f"is full: no place is left for {q['option']!r}",
                }
                for q in full
            ]
            refused[post] = ValidationFailed("The answers are invalid.", errors)
    return refused


def _plain(post: _Post) -> bool:
    """A post the one-statement write takes: no partial to close, invitation
    to spend or file to take (a key it claims)."""
    assert post.checking is not None
    return post.partial is None and post.invitation is None and not post.checking.files


def _answer(batch: list[_Post], answered: dict[_Post, Accepted]) -> None:
    """Answer the posts of a committed batch not answered yet: with what
    they became, or why their answers were refused."""
    for post in batch:
        if post.done.done():
            continue
        if post in answered:
            post.done.set_result(answered[post])
        elif post.checking is not None:
            post.done.set_exception(post.checking.failure())


def _next_batch(waiting: list[_Post]) -> list[_Post]:
    """The next batch, taken off `waiting`: a second post with the same
    Idempotency-Key waits for the next one, where it finds the first's
    outcome kept; so does a second completing the same partial response,
    which finds it completed, or spending the same invitation link, which
    finds it used."""
    batch: list[_Post] = []
    rest: list[_Post] = []
    keys: set[str] = set()
    partials: set[bytes] = set()
    invitations: set[bytes] = set()
    for post in waiting:
        if (
            len(batch) == MAX_BATCH
            or (post.claim is not None and post.claim.key in keys)
            or (post.partial is not None and post.partial in partials)
            or (post.invitation is not None and post.invitation in invitations)
        ):
            rest.append(post)
            continue
        batch.append(post)
        if post.claim is not None:
            keys.add(post.claim.key)
        if post.partial is not None:
            partials.add(post.partial)
        if post.invitation is not None:
            invitations.add(post.invitation)
    waiting[:] = rest
    return batch


async def _complete(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    accepted: Sequence[_Post],
    now: Any,
) -> tuple[list[_Post], dict[bytes, int]]:
    """Close the partial responses the batch's posts complete; the posts
    whose partial was completed already (its link used twice), and the
    furthest page each closed partial reached. A partial no longer kept
    (expired, purged) leaves its post an ordinary one."""
    hashes = [post.partial for post in accepted if post.partial is not None]
    if not hashes:
        return [], {}
    closed = await partial_repository.complete(session, organization_id, form_id, hashes, now)
    if len(closed) == len(hashes):
        return [], closed
    left = [h for h in hashes if h not in closed]
    used = await partial_repository.completed_among(session, organization_id, form_id, left)
    return [post for post in accepted if post.partial in used], closed


async def _claim(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    accepted: Sequence[_Post],
    new: Sequence[tuple[dict[str, Any], Accepted]],
    now: Any,
) -> list[_Post]:
    """Claim the keys of the batch's posts with their outcomes, after the
    form's lock (so the transaction's id follows it); the posts whose key a
    live row already holds."""
    keyed = [(post, accepted_) for post, (_, accepted_) in zip(accepted, new, strict=True)]
    outcomes = [
        (post.claim.key, post.claim.fingerprint, 201, a.body.decode(), location(form_id, a.id))
        for post, a in keyed
        if post.claim is not None
    ]
    if not outcomes:
        return []
    expired = now - RETENTION
    claimed = await idempotency_repository.claim_done(
        session, organization_id, outcomes, now, expired
    )
    if random.random() < 0.01:  # noqa: S311 - housekeeping, now and then
        await idempotency_repository.delete_expired(session, organization_id, expired)
    return [p for p, _ in keyed if p.claim is not None and p.claim.key not in claimed]


async def _take_files(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    accepted: Sequence[_Post],
    new: Sequence[tuple[dict[str, Any], Accepted]],
) -> dict[_Post, set[str]]:
    """Give the uploads the batch's posts name to their new submissions
    (rows written, so their ids can be referred to); the posts naming a file
    they cannot have, with the keys of the questions concerned. A file named
    by two posts of a batch goes to the first."""
    owners: dict[str, str] = {}
    named: dict[str, str] = {}
    refused: dict[_Post, set[str]] = {}
    posted: dict[str, _Post] = {}
    for post, (_, submission) in zip(accepted, new, strict=True):
        assert post.checking is not None
        for file_id, key in post.checking.files.items():
            if file_id in owners:
                refused.setdefault(post, set()).add(key)
                continue
            owners[file_id], named[file_id], posted[file_id] = submission.id, key, post
    if not owners:
        return refused
    wrong = await file_service.take(session, organization_id, form_id, owners, named)
    for file_id in wrong:
        refused.setdefault(posted[file_id], set()).add(named[file_id])
    return refused


def _postgres(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "postgresql"
