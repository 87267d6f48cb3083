"""A form's schedule, limit and quotas: when it takes answers.

A form takes answers while it is published, its `closes_at` has not come and
it has fewer live submissions than `max_submissions`. Its status follows:
the post that fills the last place closes it in its own transaction; a
sweep (and any post or save that finds it due) closes it at `closes_at`
and publishes it at `opens_at`. Each move is a `form.status_changed` event
with the reason. Until the sweep runs, posts are judged by the time, not by
the status alone.

`opens_at` is an instruction carried out once: a form published before it
waits closed, and when it opens the setting is cleared, so that closing the
form by hand later is not undone by a stale opening time.
"""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import orjson

from formsapi.errors import Conflict
from formsapi.kit.time import isoformat_z
from formsapi.models import Form, FormStatus


class Reason(StrEnum):
    """Why a form's status moved by itself."""

    opens_at = "opensAt"
    closes_at = "closesAt"
    max_submissions = "maxSubmissions"


class State(StrEnum):
    """What a form's hosted page shows."""

    open = "open"
    before = "before"  # not open yet: its message before opening
    after = "after"  # closed: its message after closing


class FormNotAccepting(Conflict):
    """Only published forms take submissions; `formStatus` says what this one
    is. Publish it (PATCH its status) first."""

    title = "Form not accepting submissions"
    slug = "form-not-accepting"


class FormNotOpen(FormNotAccepting):
    """The form opens at a set time (`opensAt`) and takes no submission before
    it. Post again once it has opened."""

    title = "Form not open yet"
    slug = "form-not-open"


class FormClosed(FormNotAccepting):
    """The form closed by itself: its closing time (`closesAt`) has passed, or
    it has as many submissions as it takes (`maxSubmissions`); `reason` says
    which. Its owners can reopen it with a later `closesAt` or a higher
    `maxSubmissions` (or none), then publish it."""

    title = "Form closed"
    slug = "form-closed"


class FormEnded(Conflict):
    """A form cannot be published while its closing time has passed or it has
    as many submissions as `maxSubmissions`: it would close again at once.
    Send a later `closesAt` or a higher `maxSubmissions` (or null for none)
    with the status, or before it."""

    title = "Form ended by its schedule or limit"
    slug = "form-ended"


class QuotaFull(Conflict):
    """An answer chose an option whose places are all taken, and the form's
    quota for it ends the form for those who choose it (`endForm`): nothing
    was stored. `message` is what the form says to them; `question` and
    `option` name the quota."""

    title = "Quota full"
    slug = "quota-full"


def ended(form: Form, now: datetime) -> Reason | None:
    """Why the form takes no more answers whatever its status, if it does not."""
    if form.closes_at is not None and form.closes_at <= now:
        return Reason.closes_at
    if form.max_submissions is not None and form.response_count >= form.max_submissions:
        return Reason.max_submissions
    return None


def settle(form: Form, now: datetime, asked: str | None = None) -> Reason | None:
    """Bring the form's status in line with its schedule and limit at `now`;
    the reason when it moved. `asked`: the status a person set in the same
    change, which an opening time already past does not override, and which,
    when it is `published`, a form that has ended refuses (FormEnded)."""
    if form.opens_at is not None and form.opens_at <= now:
        form.opens_at = None  # carried out: it opens now
        if form.status == FormStatus.closed and asked is None and ended(form, now) is None:
            form.status = FormStatus.published
            return Reason.opens_at
    if form.status != FormStatus.published:
        return None
    if form.opens_at is not None:  # still to come: it waits closed
        form.status = FormStatus.closed
        return Reason.opens_at
    why = ended(form, now)
    if why is None:
        return None
    if asked == FormStatus.published:
        raise FormEnded(_ended_detail(form, why), reason=why.value)
    form.status = FormStatus.closed
    return why


def state(form: Form, now: datetime) -> State:
    """What the form's hosted page shows at `now`, judged by the time: a form
    due to open or close shows as it will be once the sweep has run."""
    if form.status == FormStatus.closed:
        if form.opens_at is None:
            return State.after
        if form.opens_at > now:
            return State.before
        return State.open if ended(form, now) is None else State.after
    if form.opens_at is not None and form.opens_at > now:
        return State.before
    return State.after if ended(form, now) is not None else State.open


def refusal(form: Form, now: datetime) -> FormNotAccepting:
    """Why a post to the form is refused, as its problem."""
    if state(form, now) == State.before and form.opens_at is not None:
        return FormNotOpen(
            f"This form opens at {_time(form.opens_at)}; it takes no submission before.",
            formStatus=form.status,
            opensAt=_time(form.opens_at),
        )
    why = ended(form, now)
    if why is not None:
        return FormClosed(_ended_detail(form, why), formStatus=form.status, reason=why.value)
    return FormNotAccepting(
        f"This form is {form.status}; only published forms take submissions.",
        formStatus=form.status,
    )


def closed_by(why: Reason, closes_at: datetime | None) -> FormClosed:
    """The problem of a post refused under the form's lock."""
    if why == Reason.closes_at and closes_at is not None:
        detail = f"This form closed at {_time(closes_at)}; it takes no more submissions."
    else:
        detail = "This form has all the submissions it takes (maxSubmissions)."
    return FormClosed(detail, formStatus=FormStatus.closed, reason=why.value)


def _ended_detail(form: Form, why: Reason) -> str:
    if why == Reason.closes_at and form.closes_at is not None:
        return (
            f"This form closed at {_time(form.closes_at)}; set a later closesAt "
            "(or null) to take submissions again."
        )
    return (
        f"This form has {form.response_count} submissions of the {form.max_submissions} "
        "it takes; raise maxSubmissions (or set it to null) to take more."
    )


def _time(moment: datetime) -> str:
    return isoformat_z(moment.astimezone(UTC))


def quota_key(quota: dict[str, Any]) -> tuple[str, str]:
    """The answer count a quota reads: the question's key and the option as
    the answer counts store it (its JSON)."""
    return quota["question"], orjson.dumps(quota["option"]).decode()
