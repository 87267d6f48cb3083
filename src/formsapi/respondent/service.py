"""Access and erasure by person: every submission and partial response in
an organization whose email answer (or a chosen hidden field) equals a
value, exported or deleted in one request, each time with an audit entry
that holds who, what, when and how many, never the value nor any answer.

The search reads only questions of type email (or the one hidden field
named), in the forms whose versions ask them, with each engine's JSON
functions: a scan of the organization's submissions, bounded by MAX_FOUND,
on an endpoint of its own, never on a path that takes answers."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest
from formsapi.file import service as file_service
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.kit.time import isoformat_z
from formsapi.models import PartialResponse, Submission
from formsapi.respondent import audit as audit_service
from formsapi.respondent import repository
from formsapi.respondent.audit import Actor
from formsapi.submission import service as submission_service

# Submissions (and, apart, partial responses) one request exports or erases.
MAX_FOUND = 1000

EXPORTED = "respondent.exported"
ERASED = "respondent.erased"


@dataclass(frozen=True, slots=True)
class Person:
    """Whom to find: by the answer to any email question (case-insensitive
    in ASCII letters), or by a hidden field's exact value."""

    value: str
    field: str | None = None  # None: by email

    @property
    def by_email(self) -> bool:
        return self.field is None


def person(email: str | None, field: str | None, value: str | None) -> Person:
    """The query's person, or a 400 that says how to name one."""
    if email is not None and field is None and value is None:
        return Person(email)
    if email is None and field is not None and value is not None:
        return Person(value, field)
    raise BadRequest("Give either `email`, or `field` (a hidden field's key) and `value`.")


async def _keys(session: AsyncSession, organization_id: str, who: Person) -> dict[str, list[str]]:
    """The answer keys to look in, each with the forms whose versions ask it
    (an email question, or the named hidden field)."""
    keys: defaultdict[str, set[str]] = defaultdict(set)
    for version in await form_repository.versions_of_organization(session, organization_id):
        if who.by_email:
            for block in version.blocks:
                if block.get("type") == "email" and isinstance(block.get("key"), str):
                    keys[block["key"]].add(version.form_id)
        elif any(h.key == who.field for h in form_service.definition_of(version).hidden_fields):
            keys[str(who.field)].add(version.form_id)
    if not keys and not who.by_email:
        raise BadRequest(f"No form of this organization has a hidden field '{who.field}'.")
    return {key: sorted(forms) for key, forms in keys.items()}


async def hidden_fields(session: AsyncSession, organization_id: str) -> list[str]:
    """The keys of the hidden fields the organization's forms declare (any version)."""
    keys = {
        field.key
        for version in await form_repository.versions_of_organization(session, organization_id)
        for field in form_service.definition_of(version).hidden_fields
    }
    return sorted(keys)


@dataclass(frozen=True, slots=True)
class Found:
    submissions: Sequence[Submission]
    partials: Sequence[PartialResponse]
    more: bool  # more matched than one request takes

    @property
    def count(self) -> int:
        return len(self.submissions) + len(self.partials)


async def find(session: AsyncSession, organization_id: str, who: Person) -> Found:
    """The person's submissions and open partial responses, up to MAX_FOUND of each."""
    keys = await _keys(session, organization_id, who)
    if not keys:
        return Found((), (), False)
    fold, value = who.by_email, who.value
    rows = await repository.submissions(session, organization_id, keys, value, fold, MAX_FOUND + 1)
    partials = await repository.partials(session, organization_id, keys, value, fold, MAX_FOUND + 1)
    more = len(rows) > MAX_FOUND or len(partials) > MAX_FOUND
    return Found(rows[:MAX_FOUND], partials[:MAX_FOUND], more)


def _partial(partial: PartialResponse) -> dict[str, Any]:
    return {
        "id": partial.id,
        "formId": partial.form_id,
        "startedAt": isoformat_z(partial.started_at),
        "updatedAt": isoformat_z(partial.updated_at),
        "expiresAt": isoformat_z(partial.expires_at),
        "lastPage": partial.reached + 1,
        "answers": partial.answers or {},
    }


async def export(
    session: AsyncSession, organization_id: str, who: Person, actor: Actor
) -> dict[str, Any]:
    """Everything kept of the person's answers, as the API shows it, with
    an audit entry of the export."""
    found = await find(session, organization_id, who)
    await audit_service.record(session, organization_id, actor, EXPORTED, found.count)
    return {
        "submissions": [submission_service.to_dict(s) for s in found.submissions],
        "partials": [_partial(p) for p in found.partials],
        "complete": not found.more,
    }


@dataclass(frozen=True, slots=True)
class Erased:
    submissions: int
    partials: int
    more: bool


async def erase(session: AsyncSession, organization_id: str, who: Person, actor: Actor) -> Erased:
    """Delete every submission and partial response of the person found,
    each submission as the API's delete does (a tombstone in its form's
    feed, a submission.deleted event, its answers out of earlier events,
    its files), in the caller's transaction, with an audit entry."""
    found = await find(session, organization_id, who)
    by_form: defaultdict[str, list[str]] = defaultdict(list)
    for submission in found.submissions:
        by_form[submission.form_id].append(submission.id)
    deleted = 0
    # Forms locked in one order: two erasures never wait on each other in a circle.
    for form_id in sorted(by_form):
        deleted += await submission_service.delete_many(
            session, organization_id, form_id, by_form[form_id]
        )
    erased = await repository.erase_partials(
        session, organization_id, [p.id for p in found.partials]
    )
    for form_id, answers in erased:
        await file_service.drop_named(session, organization_id, form_id, answers)
    await audit_service.record(session, organization_id, actor, ERASED, deleted + len(erased))
    return Erased(deleted, len(erased), found.more)
