"""The one statement that writes a batch of new submissions on PostgreSQL.

A form's posts queue on its lock, and every round trip a batch makes while
holding it is time no other batch can write: with the lock statement, the
rows and events, the counts and the commit each a round trip of its own,
posting was bound by those waits with a quarter of the machine idle
(bench/RESULTS.md). Here one statement takes the lock, then reads the time
(so submission times follow change numbers, as when they were read after
the lock), numbers the batch, and writes its submissions, events, outbox rows
and counts; only the commit follows. The batch's JSON is made before, in
Python, in parts around each time and change number (submission/service.py,
`Unnumbered`), and the database puts them in."""

from collections.abc import Sequence
from datetime import timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    DateTime,
    Executable,
    Integer,
    Interval,
    Text,
    bindparam,
    case,
    cast,
    column,
    func,
    insert,
    literal,
    or_,
    select,
    true,
)
from sqlalchemy.dialects import postgresql

from formsapi.event import repository as event_repository
from formsapi.form.repository import submission_lock_statement
from formsapi.funnel import repository as funnel_repository
from formsapi.kit.time import EPOCH
from formsapi.kit.time import offset as clock_offset
from formsapi.models import (
    AnswerCount,
    EventType,
    Form,
    FunnelCount,
    IdempotencyKey,
    Submission,
    SubmissionCount,
    SubmissionDayCount,
)
from formsapi.submission.repository import tallies
from formsapi.submission.repository.tallies import Tally, tally_arrays

# The arrays of a batch, one element a submission, in change number order.
# No parameter is named as a column of the tables written: an UPDATE would
# take it for a value to set.
_ARRAYS = (
    "sub_ids",
    "event_ids",
    "answers_texts",
    "endings",
    "languages",
    "body_heads",  # the body's parts around submittedAt, updatedAt and changeSeq
    "body_betweens",
    "body_befores",
    "body_tails",
    "thin_heads",  # the thin form's, around changeSeq
    "thin_tails",
)
# A batch with keys: each post's Idempotency-Key and its request's fingerprint, or null.
_CLAIM_ARRAYS = ("claim_keys", "claim_prints")
# isoformat_z's form (kit/time.py): milliseconds, cut, not rounded, as Python cuts.
_API_TIME = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'


@cache
def _statement(keyed: bool) -> Executable:
    """Built once. Nothing is written unless the form, published, still has
    the version the batch was checked against (:version): the caller then
    takes the general path, which finds out why."""
    # Its `at`: the batch's time, read once the form's row is locked.
    # A form with quotas, or whose batch would reach its limit or come after
    # its closing time, is left to the general path, which refuses the posts
    # beyond and closes the form (form/limits.py); the rest, most forms, pay
    # for these tests on the locked row only.
    moment = func.clock_timestamp() + bindparam("offset", type_=Interval())
    locked = (
        submission_lock_statement(True)
        .where(
            Form.version == bindparam("checked_version"),
            Form.quotas.is_(None),
            or_(
                Form.max_submissions.is_(None),
                Form.response_count + bindparam("n") < Form.max_submissions,
            ),
            or_(Form.closes_at.is_(None), Form.closes_at > moment),
            # A form taking one response per email address decides each
            # under its lock, on the general path (submission/intake.py).
            or_(Form.one_response_by.is_(None), Form.one_response_by != "email"),
        )
        .cte("lk")
    )
    texts = postgresql.ARRAY(Text)
    names = _ARRAYS + _CLAIM_ARRAYS if keyed else _ARRAYS
    arrays = func.unnest(*(bindparam(name, type_=texts) for name in names))
    batch = arrays.table_valued(*(column(name, Text) for name in names), with_ordinality="i")
    batch = batch.render_derived(name="b")
    number = (locked.c.change_seq - bindparam("n") + batch.c.i).label("seq")
    rows = (
        select(*(batch.c[name] for name in names), batch.c.i, number, locked.c.at)
        .select_from(locked.join(batch, true()))
        .cte("r")
    )
    text_number = cast(rows.c.seq, Text)
    text_time = func.to_char(func.timezone("UTC", rows.c.at), _API_TIME)
    body = (
        rows.c.body_heads
        + text_time
        + rows.c.body_betweens
        + text_time
        + rows.c.body_befores
        + text_number
        + rows.c.body_tails
    )
    data = case(
        (
            func.octet_length(body) > bindparam("thin_over"),
            rows.c.thin_heads + text_number + rows.c.thin_tails,
        ),
        else_=body,
    )
    events, outbox = event_repository.written_from(
        select(
            rows.c.event_ids,
            bindparam("org"),
            literal(EventType.submission_created.value),
            rows.c.at,
            bindparam("form"),
            rows.c.sub_ids,
            data,
        ).order_by(rows.c.i)
    )
    submissions = insert(Submission).from_select(
        [
            "id",
            "organization_id",
            "form_id",
            "form_version",
            "submitted_at",
            "answers",
            "change_seq",
            "ending",
            "language",
            "version",
        ],
        select(
            rows.c.sub_ids,
            bindparam("org"),
            bindparam("form"),
            bindparam("checked_version"),
            rows.c.at,
            cast(rows.c.answers_texts, postgresql.JSONB),
            rows.c.seq,
            rows.c.endings,
            rows.c.languages,
            literal(1),
        ),
        include_defaults=False,
    )
    counts = []
    for table, name in ((SubmissionCount, "hour"), (SubmissionDayCount, "day")):
        upsert = postgresql.insert(table).from_select(
            ["organization_id", "form_id", name, "count"],
            select(
                bindparam("org"),
                bindparam("form"),
                func.date_trunc(name, locked.c.at, "UTC"),
                bindparam("n"),
            ).select_from(locked),
            include_defaults=False,
        )
        counts.append(
            upsert.on_conflict_do_update(
                index_elements=["organization_id", "form_id", name],
                set_={"count": table.count + upsert.excluded.count},
            ).cte(f"{name}s")
        )
    # A batch without keys runs the statement as it was before keys were
    # claimed here, but for this constant.
    claimed = (
        select(func.count()).select_from(_claims(rows, body)).scalar_subquery()
        if keyed
        else literal(0)
    )
    return select(locked.c.change_seq, locked.c.at, claimed).add_cte(
        events, outbox, submissions.cte("sb"), *counts, *_answer_counts(locked), _funnel(locked)
    )


def _claims(rows: Any, body: Any) -> Any:
    """The keys of the batch's keyed posts claimed with their outcomes, as
    idempotency_repository.claim_done claims them: the 201 and the body the
    post is answered with, unless a live row holds the key (an expired one is
    taken over). Its rows: the keys claimed; the caller gives the whole write
    up unless every key was."""
    row = postgresql.insert(IdempotencyKey)
    claims = row.from_select(
        ["organization_id", "key", "fingerprint", "status", "body", "location", "created_at"],
        select(
            bindparam("org"),
            rows.c.claim_keys,
            rows.c.claim_prints,
            literal(201),
            body,
            func.concat("/v1/forms/", bindparam("form"), "/submissions/", rows.c.sub_ids),
            rows.c.at,
        ).where(rows.c.claim_keys.is_not(None)),
        include_defaults=False,
    )
    return (
        claims.on_conflict_do_update(
            index_elements=[IdempotencyKey.organization_id, IdempotencyKey.key],
            set_={
                name: getattr(claims.excluded, name)
                for name in ("fingerprint", "status", "body", "location", "created_at")
            },
            where=IdempotencyKey.created_at
            < claims.excluded.created_at - bindparam("claims_kept", type_=Interval()),
        )
        .returning(IdempotencyKey.key)
        .cte("claimed")
    )


def _answer_counts(locked: Any) -> list[Any]:
    """The batch's tally (tallies.tally_arrays) added to the form's answer
    counts, per hour, UTC day and in all, at the batch's time."""
    texts = postgresql.ARRAY(Text)
    pairs = func.unnest(
        bindparam("tally_keys", type_=texts),
        bindparam("tally_values", type_=texts),
        bindparam("tally_counts", type_=postgresql.ARRAY(Integer)),
    ).table_valued(column("k", Text), column("v", Text), column("c", Integer))
    pairs = pairs.render_derived(name="tl")
    ctes = []
    for period, start in (
        ("h", func.date_trunc("hour", locked.c.at, "UTC")),
        ("d", func.date_trunc("day", locked.c.at, "UTC")),
        ("t", literal(EPOCH)),
    ):
        upsert = postgresql.insert(AnswerCount).from_select(
            [*tallies.KEY, "count"],
            select(
                bindparam("org"),
                bindparam("form"),
                literal(period),
                start,
                bindparam("checked_version"),
                pairs.c.k,
                pairs.c.v,
                pairs.c.c,
            ).select_from(locked.join(pairs, true())),
            include_defaults=False,
        )
        ctes.append(tallies.adding(upsert).cte(f"answers_{period}"))
    return ctes


def _funnel(locked: Any) -> Any:
    """What the batch's posts from the hosted page add to the form's funnel
    (funnel_repository.parameters, as arrays), once the form is locked."""
    texts = postgresql.ARRAY(Text)
    rows = func.unnest(
        bindparam("funnel_periods", type_=texts),
        bindparam("funnel_starts", type_=postgresql.ARRAY(DateTime(timezone=True))),
        bindparam("funnel_steps", type_=texts),
        bindparam("funnel_counts", type_=postgresql.ARRAY(Integer)),
    ).table_valued(
        column("p", Text),
        column("s", DateTime(timezone=True)),
        column("k", Text),
        column("c", Integer),
    )
    rows = rows.render_derived(name="fn")
    upsert = postgresql.insert(FunnelCount).from_select(
        [*funnel_repository.KEY, "count"],
        select(
            bindparam("org"),
            bindparam("form"),
            rows.c.p,
            rows.c.s,
            bindparam("checked_version"),
            rows.c.k,
            rows.c.c,
        ).select_from(locked.join(rows, true())),
        include_defaults=False,
    )
    return funnel_repository.adding(upsert).cte("funnel")


def created_statement(keyed: bool) -> Executable:
    """Run with `created_parameters`, it writes a batch of new submissions
    of the form's version, with their events, counts and, `keyed`, the keys
    of its posts that have one, under the form's lock. Its one row is the
    batch's last change number, its time and how many keys were claimed; it
    has none when nothing was written (the form is missing, not published, or
    at another version). PostgreSQL only."""
    return _statement(keyed)


def created_parameters(
    organization_id: str,
    form_id: str,
    version: int,
    batch: Sequence[Any],
    thin_over: int,
    answers_tally: Tally,
    funnel: funnel_repository.Counts,
    claims: Sequence[tuple[str, str] | None],
    claims_kept: timedelta,
) -> dict[str, Any]:
    """The parameters of `created_statement` for `batch` (submission/service.py's
    `Unnumbered`, in order), its events thin when over `thin_over` bytes,
    what its answers add to the answer counts, what it adds to the form's
    funnel (the version: the batch's), and each post's key and fingerprint
    (None for a post without), keys older than `claims_kept` taken over."""
    funnel_rows = funnel_repository.parameters(funnel.items())
    keyed = any(claim is not None for claim in claims)
    return {
        **tally_arrays(answers_tally),
        "funnel_periods": [row["period"] for row in funnel_rows],
        "funnel_starts": [row["start"] for row in funnel_rows],
        "funnel_steps": [row["step"] for row in funnel_rows],
        "funnel_counts": [row["count"] for row in funnel_rows],
        "org": organization_id,
        "form": form_id,
        "checked_version": version,
        "n": len(batch),
        "offset": clock_offset(),
        "thin_over": thin_over,
        "sub_ids": [new.id for new in batch],
        "event_ids": [new.event_id for new in batch],
        "answers_texts": [new.answers_json for new in batch],
        "endings": [new.ending for new in batch],
        "languages": [new.language for new in batch],
        "body_heads": [new.body[0].decode() for new in batch],
        "body_betweens": [new.body[1].decode() for new in batch],
        "body_befores": [new.body[2].decode() for new in batch],
        "body_tails": [new.body[3].decode() for new in batch],
        "thin_heads": [new.thin[0].decode() for new in batch],
        "thin_tails": [new.thin[1].decode() for new in batch],
        **(
            {
                "claim_keys": [None if claim is None else claim[0] for claim in claims],
                "claim_prints": [None if claim is None else claim[1] for claim in claims],
                "claims_kept": claims_kept,
            }
            if keyed
            else {}
        ),
    }
