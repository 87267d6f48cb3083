"""A form's draft in the builder: saved revision by revision, checked as the
API checks a form, compared with what is published, and published as the
form's next version through the service the API uses.

A draft is a document in the API's own format (POST /v1/forms's body
without the slug): what "Download JSON" gives, what publishing sends to
form_service.update. No draft saved, or one equal to the form: nothing to
publish."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, Conflict, NotFound
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.form.schemas import FormCreate, FormUpdate
from formsapi.language.blocks import dump_blocks
from formsapi.language.compiled import Compiled
from formsapi.language.definition import Definition
from formsapi.models import Form, FormDraft, FormStatus, FormVersion, User
from formsapi.tenancy import scoped

LAYOUT = ("heading", "paragraph", "page_break")  # blocks that ask nothing
MAX_BLOCKS = 500
MAX_BYTES = 1_000_000  # of a draft's JSON: what the API's body limit lets through
KEPT = 50  # revisions kept per form: the newest, to tell a late saver what changed
DEFINITION_PARTS = {
    "hiddenFields": "hidden fields",
    "variables": "variables",
    "logic": "logic rules",
    "endings": "endings",
    "language": "language",
    "translations": "translations",
    "messages": "messages",
    "resumeDays": "days to resume",
}


@dataclass
class Draft:
    """A form's draft as the builder shows it: revision 0 is the form as it
    is, no save made since (or none kept)."""

    form: Form
    revision: int
    document: dict[str, Any]
    base_version: int
    saved_by: str | None = None  # the saver's email
    saved_at: datetime | None = None
    summary: str = ""

    @cached_property
    def unpublished(self) -> bool:
        return self.document != form_service.exported(self.form)

    @property
    def token(self) -> str:
        """What a page shows the draft at, posted back with each change: its
        revision and the version it stands on. A draft without changes of
        its own mirrors the form, which the API may move on meanwhile."""
        return f"{self.revision}.{self.base_version}"


def parse_token(token: str) -> tuple[int, int] | None:
    """A page's draft token, or None for one no page was given."""
    revision, dot, version = token.partition(".")
    numbers = (revision, version)
    if not dot or not all(n.isascii() and n.isdigit() and len(n) <= 9 for n in numbers):
        return None
    return int(revision), int(version)


class DraftChanged(Conflict):
    """Someone saved the form's draft since the page was opened: the change
    was not saved. The page shows what they changed; make yours again on it."""

    title = "The draft changed"
    slug = "draft-changed"

    def __init__(self, detail: str, changes: list["Change"]) -> None:
        super().__init__(detail)
        self.changes = changes


class FormChanged(Conflict):
    """The form was changed (a new version) since the changes to publish
    were shown: they are shown again against it."""

    title = "The form changed"
    slug = "form-changed"


def normalized(document: Any) -> dict[str, Any]:
    """`document` checked as POST /v1/forms checks a form, in the form the
    API stores it: pydantic's ValidationError or the service's
    ValidationFailed when it is not a valid form. A slug, and the sites that
    may frame the form, are not the draft's (the form's settings change them)."""
    body = FormCreate.model_validate(document)
    definition = Definition(**{n: getattr(body, n) for n in form_service.DEFINITION_FIELDS})
    form_service.check(Compiled(1, body.blocks, definition))
    return {"title": body.title, "blocks": dump_blocks(body.blocks), **definition.dump()}


async def _newest(session: AsyncSession, organization_id: str, form_id: str) -> FormDraft | None:
    statement = (
        select(FormDraft)
        .where(scoped(FormDraft, organization_id), FormDraft.form_id == form_id)
        .order_by(FormDraft.revision.desc())
        .limit(1)
    )
    return (await session.scalars(statement)).first()


async def _revision(
    session: AsyncSession, organization_id: str, form_id: str, revision: int
) -> FormDraft | None:
    statement = select(FormDraft).where(
        scoped(FormDraft, organization_id),
        FormDraft.form_id == form_id,
        FormDraft.revision == revision,
    )
    return (await session.scalars(statement)).first()


async def _email(session: AsyncSession, user_id: str | None) -> str | None:
    if user_id is None:
        return None
    found: str | None = await session.scalar(select(User.email).where(User.id == user_id))
    return found


async def get(session: AsyncSession, organization_id: str, form_id: str) -> Draft:
    form = await form_service.get(session, organization_id, form_id)
    return await _of(session, form)


async def _version(session: AsyncSession, form: Form, version: int) -> FormVersion | None:
    return await form_repository.get_version(session, form.organization_id, form.id, version)


async def _of(session: AsyncSession, form: Form) -> Draft:
    newest = await _newest(session, form.organization_id, form.id)
    if newest is None:
        return Draft(form, 0, form_service.exported(form), form.version)
    if newest.base_version != form.version:
        # The form moved on since (published, or changed over the API): a
        # draft that had no changes of its own mirrors it as it is now.
        began = await _version(session, form, newest.base_version)
        if began is not None and form_service.exported(began) == newest.document:
            return Draft(form, newest.revision, form_service.exported(form), form.version)
    return Draft(
        form,
        newest.revision,
        newest.document,
        newest.base_version,
        await _email(session, newest.saved_by),
        newest.saved_at,
        newest.summary,
    )


async def save(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    token: str,
    document: Any,
    *,
    user_id: str | None,
    summary: str,
    checked: dict[str, Any] | None = None,
) -> Draft:
    """Save `document` as the draft's next revision, if the draft is still
    at `token` (the one the saver's page showed): else DraftChanged,
    saying who changed what since. The form's row lock makes the check and
    the save one step for savers of the same form. `checked`: `document`
    normalized already (`normalized`, made off the loop)."""
    form = await form_service.get(session, organization_id, form_id, for_update=True)
    if form.status == FormStatus.archived:
        raise form_service.FormArchived("Archived forms are read-only.")
    draft = await _of(session, form)
    if draft.token != token:
        await _refuse_late(session, draft, token)
    checked = checked if checked is not None else normalized(document)
    if len(checked["blocks"]) > MAX_BLOCKS or len(orjson.dumps(checked)) > MAX_BYTES:
        raise BadRequest(
            f"A form holds at most {MAX_BLOCKS} blocks and {MAX_BYTES:,} bytes of JSON: "
            "this change would take it past that."
        )
    base_version = draft.base_version if draft.unpublished else form.version
    session.add(
        FormDraft(
            organization_id=organization_id,
            form_id=form.id,
            revision=draft.revision + 1,
            document=checked,
            base_version=base_version,
            saved_by=user_id,
            summary=summary[:300],
        )
    )
    await session.execute(
        delete(FormDraft).where(
            scoped(FormDraft, organization_id),
            FormDraft.form_id == form.id,
            FormDraft.revision <= draft.revision + 1 - KEPT,
        )
    )
    await session.flush()
    return await _of(session, form)


async def _refuse_late(session: AsyncSession, draft: Draft, token: str) -> None:
    """The saver's page showed the draft at `token`; it has moved since."""
    form = draft.form
    before = None
    if (seen := parse_token(token)) is not None:
        revision, version = seen
        if revision == draft.revision or revision == 0:  # the form moved under it
            began = await _version(session, form, version)
            before = form_service.exported(began) if began is not None else None
        elif revision < draft.revision:
            then = await _revision(session, form.organization_id, form.id, revision)
            before = then.document if then is not None else None
    who = draft.saved_by or "Someone"
    when = f" at {draft.saved_at:%H:%M} UTC" if draft.saved_at else ""
    raise DraftChanged(
        f"{who} changed this form's draft{when}, after you opened it: your change was not "
        "saved, so as not to undo theirs. What changed is listed; make your change "
        "again on the draft as it is now.",
        compare(before, draft.document) if before is not None else [],
    )


@dataclass
class Change:
    what: str  # "added", "removed", "changed", "retyped", "moved"
    text: str
    warning: str | None = None


def label(block: dict[str, Any]) -> str:
    text = block.get("title") or block.get("text") or block.get("key") or block.get("type")
    return f"“{str(text)[:80]}”"


def _keyed(blocks: Sequence[dict[str, Any]]) -> dict[str, tuple[int, dict[str, Any]]]:
    """Blocks by key; a block without one (a heading, a paragraph) by its
    type and place among its kind."""
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    seen: dict[str, int] = {}
    for index, block in enumerate(blocks):
        key = block.get("key")
        if not isinstance(key, str):
            kind = str(block.get("type"))
            seen[kind] = seen.get(kind, 0) + 1
            key = f"{kind}#{seen[kind]}"
        found[key] = (index, block)
    return found


def compare(before: dict[str, Any], after: dict[str, Any], *, answered: int = 0) -> list[Change]:
    """What changes from `before` to `after`, block by block (by key), then
    the rest of the definition; with a warning where the form's `answered`
    submissions are touched: a question removed or of another type."""
    changes: list[Change] = []
    if before.get("title") != after.get("title"):
        changes.append(
            Change("changed", f"Title: “{before.get('title')}” → “{after.get('title')}”")
        )
    old, new = _keyed(before.get("blocks", [])), _keyed(after.get("blocks", []))
    kept = [key for key in new if key in old]
    for key, (index, block) in new.items():
        if key not in old:
            changes.append(Change("added", f"Block {index + 1} {label(block)} added"))
    for key, (_, block) in old.items():
        if key in new:
            continue
        warning = None
        if answered and block.get("type") not in LAYOUT:
            warning = (
                f"{label(block)} is removed: the answers to it in the {answered:,} "
                "submissions so far stay stored, but the form no longer asks it."
            )
        changes.append(Change("removed", f"{label(block)} removed", warning))
    for key in kept:
        was, now = old[key][1], new[key][1]
        if was.get("type") != now.get("type"):
            warning = None
            if answered and was.get("type") not in LAYOUT:
                warning = (
                    f"{label(now)} changes from {was.get('type')} to {now.get('type')}: "
                    f"answers already given ({answered:,} submissions) may not fit it."
                )
            changes.append(
                Change(
                    "retyped",
                    f"{label(now)}: {was.get('type')} → {now.get('type')}",
                    warning,
                )
            )
        elif was != now:
            fields = sorted(k for k in {*was, *now} if was.get(k) != now.get(k))
            changes.append(Change("changed", f"{label(now)}: {', '.join(fields)} changed"))
    order_before = [key for key in old if key in new]
    if order_before != kept:
        changes.append(Change("moved", "Blocks reordered"))
    for name, words in DEFINITION_PARTS.items():
        if before.get(name) != after.get(name):
            changes.append(Change("changed", f"The form's {words} changed"))
    return changes


async def publish(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    token: str,
    version: int,
    *,
    make_public: bool,
) -> Form:
    """Publish the draft at `token`, reviewed against the form's
    `version`, as the form's next version (through form_service.update, as
    PATCH /v1/forms/{id} would); a draft form becomes published when
    `make_public`. Refused if either moved since the review."""
    form = await form_service.get(session, organization_id, form_id, for_update=True)
    draft = await _of(session, form)
    if draft.token != token:
        await _refuse_late(session, draft, token)
    if form.version != version:
        raise FormChanged(
            f"The form was changed since you reviewed this (it is now at version "
            f"{form.version}): look over what publishing changes again."
        )
    document = draft.document
    changes = FormUpdate.model_validate(
        {
            "title": document["title"],
            "blocks": document["blocks"],
            **{name: document[name] for name in DEFINITION_PARTS if name in document},
            **({"status": FormStatus.published} if make_public else {}),
        }
    )
    return await form_service.update(session, organization_id, form_id, changes)


async def versions(
    session: AsyncSession, organization_id: str, form_id: str
) -> Sequence[FormVersion]:
    form = await form_service.get(session, organization_id, form_id)
    return await form_repository.all_versions(session, organization_id, form.id)


async def version_document(
    session: AsyncSession, organization_id: str, form_id: str, version: int
) -> tuple[Form, FormVersion]:
    form = await form_service.get(session, organization_id, form_id)
    found = await form_repository.get_version(session, organization_id, form.id, version)
    if found is None:
        raise NotFound(f"Form '{form_id}' has no version {version}.")
    return form, found
