"""Events: what changed, written in the transaction that changed it, so
there is never a change without its event nor an event without its change.
The events list serves clients catching up; webhooks deliver the same
events (formsapi.webhook)."""

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Executable, Insert, event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from formsapi.api_key.scopes import Scope
from formsapi.db.session import ReadSession
from formsapi.errors import FormsAPIError
from formsapi.event import repository
from formsapi.kit.ids import is_plausible, new_id
from formsapi.models import EventType

# Past this many bytes of JSON an event carries the resource's id and URL
# instead of the resource: Standard Webhooks advises payloads under ~20 KB,
# and a receiver fetches the rest when it needs it.
THIN_OVER = 20_000

MAX_EVENTS = 1000
# How many events one call of the list looks through for ones its filters match.
SCAN = 10_000

# The scope that reads each type's data: an event shows (and a webhook
# endpoint is sent) only what its reader could read from the API itself.
READ_SCOPE = {
    EventType.submission_created: Scope.submissions_read,
    EventType.submission_updated: Scope.submissions_read,
    EventType.submission_deleted: Scope.submissions_read,
    EventType.form_created: Scope.forms_read,
    EventType.form_updated: Scope.forms_read,
    EventType.form_status_changed: Scope.forms_read,
    EventType.form_deleted: Scope.forms_read,
    EventType.webhook_endpoint_disabled: Scope.webhooks_manage,
    EventType.ping: Scope.webhooks_manage,
}
# The events whose data holds a submission's answers.
WITH_ANSWERS = (EventType.submission_created, EventType.submission_updated)


def data_text(data: dict[str, Any], thin: dict[str, Any]) -> str:
    """The event's `data` as stored and sent: the resource, or `thin` (its
    id, URL and versions, marked `"thin": true`) when that is too large."""
    return encoded_text(orjson.dumps(data), thin)


def encoded_text(encoded: bytes, thin: dict[str, Any]) -> str:
    """data_text of data already encoded as JSON."""
    if len(encoded) > THIN_OVER:
        encoded = orjson.dumps({**thin, "thin": True})
    return encoded.decode()


def parameters(
    organization_id: str,
    type_: EventType,
    occurred_at: datetime,
    data: str,
    form_id: str | None,
    subject_id: str,
    event_id: str | None = None,
) -> dict[str, Any]:
    """The parameters `write` takes for one event about `subject_id` (the
    resource its data is), with `data` as its JSON text (data_text)."""
    return {
        "event_id": event_id or new_id("evt"),
        "organization_id": organization_id,
        "event_type": type_.value,
        "occurred_at": occurred_at,
        "form_id": form_id,
        "subject_id": subject_id,
        "event_data": data,
    }


async def write(
    session: AsyncSession, rows: Sequence[Mapping[str, Any]], along: Insert | None = None
) -> None:
    """The one way events are written: each of `rows` (`parameters`, plus
    the parameters of `along` when a domain's own insert rides along, as a
    submission's row does) becomes an event and its outbox row, in the
    caller's transaction, so there is never a change without its event."""
    if rows:
        await repository.write(session, rows, along)
        session.info[_WROTE] = True


async def write_within(
    session: AsyncSession, statement: Executable, parameters: Mapping[str, Any]
) -> Sequence[Any] | None:
    """Run `statement`, which writes its events through
    `repository.written_from` among its own writes (PostgreSQL: a batch of
    changes in one round trip); its first row."""
    connection = await session.connection()
    found = (await connection.execute(statement, parameters)).first()
    session.info[_WROTE] = True
    return found


# What runs once a transaction that wrote events has committed, in this
# process: a webhook worker beside the API wakes at once (webhook/worker.py).
_WROTE = "formsapi.events_written"
_committed: list[Callable[[], None]] = []


def when_committed(callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` after each commit of events in this process; returns
    what stops it."""
    _committed.append(callback)
    return lambda: _committed.remove(callback)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(_WROTE, False):
        for callback in list(_committed):
            callback()


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, _: Any) -> None:
    session.info.pop(_WROTE, None)


async def record(
    session: AsyncSession,
    organization_id: str,
    type_: EventType,
    occurred_at: datetime,
    data: dict[str, Any],
    *,
    form_id: str | None = None,
    thin: dict[str, Any] | None = None,
) -> str:
    """Write one event in the caller's transaction; its id."""
    text = data_text(data, thin or {"id": data["id"]})
    values = parameters(organization_id, type_, occurred_at, text, form_id, data["id"])
    await write(session, [values])
    return str(values["event_id"])


async def erase_answers(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    submission_ids: Sequence[str] | None = None,
) -> None:
    """Take deleted submissions' answers (or, with no `submission_ids`,
    every submission's of a deleted form) out of every event kept: the
    events stay, as a record of what happened, marked `"redacted": true`.
    What a webhook sends or resends from then on is what remains. In the
    deleting transaction, so answers never outlive their submission."""
    await repository.redact_answers(
        session, organization_id, form_id, submission_ids, [t.value for t in WITH_ANSWERS]
    )


class EventCursorExpired(FormsAPIError):
    """The events list cannot continue after this event: it is older than
    the events kept (FORMSAPI_EVENT_DAYS, 30 by default), or not an event of
    your organization. Start again without `after` (the oldest event kept),
    and reconcile with the change feed of each form if you may have missed
    some."""

    status = 410
    title = "Cursor expired"
    slug = "event-cursor-expired"


def _wire(row: repository.EventRow, scopes: frozenset[str]) -> dict[str, Any]:
    id_, type_, occurred_at, data, _, _ = row
    needed = READ_SCOPE.get(EventType(type_), Scope.webhooks_manage)
    if needed not in scopes:
        # What happened shows; what it carries needs the scope that reads it.
        return {
            "id": id_,
            "type": type_,
            "timestamp": occurred_at,
            "data": None,
            "requiredScope": str(needed),
        }
    return {"id": id_, "type": type_, "timestamp": occurred_at, "data": orjson.Fragment(data)}


async def list_document(
    session: ReadSession,
    organization_id: str,
    after: str | None,
    limit: int,
    types: Sequence[str],
    form_id: str | None,
    scopes: frozenset[str],
) -> bytes:
    """One page of the organization's events, oldest first, from after the
    event `after` (from the oldest kept when None). An event's data shows
    only to a reader with the scope that reads its resource (`scopes`).

    Filtered calls look through at most SCAN events, so a rare type costs a
    bounded read; `next` then says how far they looked."""
    position = (0, 0)
    if after is not None:
        found = await repository.position_of(session, organization_id, after)
        if found is None or found < await repository.purged_position(session):
            raise EventCursorExpired(
                f"No event '{after}' is kept for your organization: start again without `after`.",
            )
        position = found
    bound = None
    if types or form_id is not None:
        bound = await repository.scan_bound(session, organization_id, position, SCAN)
    rows = await repository.page(
        session,
        organization_id,
        position,
        limit + 1,
        upto=bound[0] if bound else None,
        types=types,
        form_id=form_id,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_ = rows[-1][0] if rows else after
    if bound is not None and not more:
        # The filters looked as far as one call may: continue from the last
        # event looked at, matching or not.
        more, next_ = True, bound[1]
    return orjson.dumps(
        {"data": [_wire(row, scopes) for row in rows], "next": next_, "hasMore": more}
    )


def plausible_id(value: str) -> bool:
    return is_plausible(value) and value.startswith("evt_")
