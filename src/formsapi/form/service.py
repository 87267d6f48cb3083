"""Forms: reading and managing them. Every lookup is scoped to the caller's organization, so a form
of another organization is indistinguishable from one that does not exist."""

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import orjson
from sqlalchemy import Row, event, inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from formsapi.admission import service as admission_service
from formsapi.admission.service import SecretKeyNeeded
from formsapi.db.session import ReadSession
from formsapi.errors import BadRequest, Conflict, FormNotFound, NotFound, ValidationFailed
from formsapi.event import service as event_service
from formsapi.form import limits, repository
from formsapi.form.limits import FormNotAccepting
from formsapi.form.schemas import TITLE_MAX, FormCreate, FormUpdate, OneResponse, Quota
from formsapi.form.work import worked_out
from formsapi.kit.fair import FairShare
from formsapi.kit.ids import is_plausible, new_id
from formsapi.kit.pagination import PageParams
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.language import compiled, cost, translation
from formsapi.language.blocks import (
    Block,
    BlockList,
    Dropdown,
    SingleChoice,
    dump_blocks,
    key_errors,
    questions,
)
from formsapi.language.cost import cost_of
from formsapi.language.definition import (
    DEFAULT_LANGUAGE,
    RESUME_DAYS,
    Definition,
    translated,
)
from formsapi.language.definition import check as definition_check
from formsapi.language.translation import Translation
from formsapi.models import EventType, Form, FormStatus, FormVersion
from formsapi.user import service as user_service

# Hours before one address may answer again, for a form taking one response per IP.
DEFAULT_WINDOW_HOURS = 24

__all__ = ["FormNotAccepting"]  # its home is form/limits.py; callers import it from here


async def list_page(
    session: AsyncSession, organization_id: str, page: PageParams
) -> tuple[Sequence[repository.SummaryRow], int]:
    """One page of forms, newest first, and the exact total."""
    rows = await repository.list_page(session, organization_id, page.offset, page.limit)
    total = rows[0].total if rows else await repository.count(session, organization_id)
    return rows, total


async def page_document(session: ReadSession, organization_id: str, page: PageParams) -> bytes:
    """The JSON body of one page of forms, newest first, with the exact total."""
    rows, total = await list_page(session, organization_id, page)
    return orjson.dumps(
        {
            "data": [summary(row) for row in rows],
            "pagination": {"page": page.page, "limit": page.limit, "total": total},
        }
    )


async def get(
    session: AsyncSession, organization_id: str, form_id: str, *, for_update: bool = False
) -> Form:
    form = (
        await repository.get(session, organization_id, form_id, for_update=for_update)
        if is_plausible(form_id)
        else None
    )
    if form is None:
        raise FormNotFound(form_id)
    return form


async def change_state(
    session: AsyncSession, organization_id: str, form_id: str
) -> tuple[int, int, datetime]:
    """What anything made from the form's submissions depends on: a post, an
    edit or a delete moves its change number, any other change its version
    or last change. Read without decoding its blocks; FormNotFound."""
    found = (
        await repository.change_state(session, organization_id, form_id)
        if is_plausible(form_id)
        else None
    )
    if found is None:
        raise FormNotFound(form_id)
    return found[0], found[1], found[2]


async def titles(
    session: AsyncSession, organization_id: str, form_ids: Collection[str]
) -> dict[str, str]:
    """The titles of the organization's forms among `form_ids`, in one read."""
    return await repository.titles(session, organization_id, form_ids) if form_ids else {}


def summary(form: Form | repository.SummaryRow) -> dict[str, Any]:
    return {
        "id": form.id,
        "title": form.title,
        "slug": form.slug,
        "status": form.status,
        "responseCount": form.response_count,
        "createdAt": isoformat_z(form.created_at),
        "changeSeq": form.change_seq,
    }


def current(form: Form) -> compiled.Compiled:
    """The form's version as it stands, compiled (language/compiled.py).
    Inside the transaction that saved it, the save's own, which the cache
    takes once it commits: a version rolled back is never kept."""
    session = inspect(form).session
    if session is not None:
        held: dict[tuple[str, str, int], compiled.Compiled] = session.info.get(_PENDING, {})
        pending = held.get((form.organization_id, form.id, form.version))
        if pending is not None:
            return pending
    return compiled.compile_version(
        form.organization_id, form.id, form.version, form.blocks, form.definition
    )


_PENDING = "formsapi.compiled_pending"


def _hold(session: AsyncSession, form: Form, made: compiled.Compiled) -> None:
    """`made`, the form's new version, for current() until the transaction
    ends, and for the cache if it commits."""
    session.info.setdefault(_PENDING, {})[(form.organization_id, form.id, made.version)] = made


@event.listens_for(Session, "after_commit")
def _kept(session: Session) -> None:
    for (organization_id, form_id, _), made in session.info.pop(_PENDING, {}).items():
        compiled.keep(organization_id, form_id, made)


@event.listens_for(Session, "after_soft_rollback")
def _dropped(session: Session, _: Any) -> None:
    session.info.pop(_PENDING, None)


def _definition_wire(stored: dict[str, Any] | None, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stored = stored or {}
    lists = ("hiddenFields", "variables", "logic", "endings")
    language = stored.get("language", DEFAULT_LANGUAGE)
    translations = stored.get("translations") or {}
    endings = stored.get("endings", [])
    missing = {
        tag: translation.missing(blocks, endings, Translation.model_validate(texts))
        for tag, texts in translations.items()
    }
    return {
        **{name: stored.get(name, []) for name in lists},
        "language": language,
        "languages": [language, *translations],
        "translations": translations,
        "missingTranslations": missing,
        "messages": stored.get("messages", {}),
        "resumeDays": stored.get("resumeDays", RESUME_DAYS),
    }


async def places_taken(session: AsyncSession, form: Form) -> dict[tuple[str, str], int]:
    """The places its quotas have taken (none read without quotas)."""
    keys = [limits.quota_key(quota) for quota in form.quotas or []]
    return await repository.places_taken(session, form.organization_id, form.id, keys)


async def full_options(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    quotas: Sequence[tuple[str, str, int]],
) -> set[tuple[str, str]]:
    """Which of `quotas` (question, option, limit) have no place left."""
    keys = [limits.quota_key({"question": q, "option": o}) for q, o, _ in quotas]
    taken = await repository.places_taken(session, organization_id, form_id, keys)
    return {
        (question, option)
        for (question, option, limit), key in zip(quotas, keys, strict=True)
        if taken.get(key, 0) >= limit
    }


def _quotas_wire(form: Form, taken: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    return [
        {
            "message": None,
            **quota,
            "remaining": max(quota["limit"] - taken.get(limits.quota_key(quota), 0), 0),
        }
        for quota in form.quotas or []
    ]


def detail(
    form: Form, lang: str | None = None, taken: dict[tuple[str, str], int] | None = None
) -> dict[str, Any]:
    """The form as the API shows it; with `lang`, its texts in that language
    (BadRequest when the form has no such language); `taken`: the places its
    quotas have taken (places_taken)."""
    wire = _definition_wire(form.definition, form.blocks)
    # Stored blocks are already in their API shape; they pass through untouched.
    title, blocks, endings = form.title, form.blocks, wire["endings"]
    content_language = wire["language"]
    if lang is not None:
        picked = translation.pick(lang, wire["languages"])
        if picked is None:
            available = ", ".join(wire["languages"])
            raise BadRequest(f"The form has no language '{lang}'; it has {available}.")
        content_language = picked
        if picked != wire["language"]:
            texts = Translation.model_validate(wire["translations"][picked])
            title, blocks, endings = translation.translate(title, blocks, endings, texts)
    return {
        **summary(form),
        "title": title,
        "updatedAt": isoformat_z(form.updated_at),
        "version": form.version,
        **wire,
        "blocks": blocks,
        "endings": endings,
        "contentLanguage": content_language,
        "embedOrigins": form.embed_origins,
        "challenge": form.challenge,
        "retentionDays": form.retention_days,
        "opensAt": None if form.opens_at is None else isoformat_z(form.opens_at),
        "closesAt": None if form.closes_at is None else isoformat_z(form.closes_at),
        "maxSubmissions": form.max_submissions,
        "messageBeforeOpening": form.message_before_opening,
        "messageAfterClosing": form.message_after_closing,
        "quotas": _quotas_wire(form, taken or {}),
        "oneResponse": admission_service.setting(
            form.one_response_by, form.one_response_question, form.one_response_hours
        ),
        "passwordRequired": form.password_hash is not None,
        "schema": current(form).schema_titled(form.title),
    }


# Where a form may go from each status. Archiving is always possible and final.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    FormStatus.draft: (FormStatus.published, FormStatus.archived),
    FormStatus.published: (FormStatus.closed, FormStatus.archived),
    FormStatus.closed: (FormStatus.published, FormStatus.archived),
    FormStatus.archived: (),
}


class InvalidTransition(Conflict):
    """A form's status cannot move that way: draft to published, published to
    closed, closed to published, anything to archived. `allowedTransitions`
    lists where this form may go."""

    title = "Invalid status transition"
    slug = "invalid-transition"


class FormArchived(Conflict):
    """The form is archived, and archived forms are read-only: its blocks,
    title, slug and status stay as they are."""

    title = "Form archived"
    slug = "form-archived"


class SlugTaken(Conflict):
    """Another form of your organization has this slug: choose another, or
    leave it out to have one made from the title."""

    title = "Slug taken"
    slug = "slug-taken"


def check(made: compiled.Compiled) -> None:
    """The whole form as a save checks it: keys, logic, recall, endings,
    translations and cost."""
    blocks, definition, layout = made.blocks, made.definition, made.layout
    errors = key_errors(blocks) or definition_check(blocks, definition, layout)
    if not errors:
        shown, errors = translated(blocks, definition, layout)
    if not errors and (costly := cost.problem(cost_of(layout, shown.values()))):
        errors = [costly]
    if errors:
        raise ValidationFailed(
            "The form is invalid.", [{"pointer": p, "detail": d} for p, d in errors]
        )


def _stored(definition: Definition) -> dict[str, Any] | None:
    dumped = definition.dump()
    # Defaults left out: a form without settings stays without a definition.
    if dumped.get("resumeDays") == RESUME_DAYS:
        del dumped["resumeDays"]
    if dumped.get("language") == DEFAULT_LANGUAGE:
        del dumped["language"]
    if not dumped.get("messages"):
        dumped.pop("messages", None)
    return dumped if any(dumped.values()) else None


DEFINITION_FIELDS = (
    "hidden_fields",
    "variables",
    "logic",
    "endings",
    "language",
    "translations",
    "messages",
    "resume_days",
)


def definition_of(form: Form | FormVersion) -> Definition:
    return Definition.model_validate(form.definition or {})


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:90].strip("-") or "form"


async def _free_slug(session: AsyncSession, organization_id: str, title: str) -> str:
    base = slugify(title)
    for suffix in ("", *(f"-{n}" for n in range(2, 100))):
        if not await repository.slug_taken(session, organization_id, base + suffix):
            return base + suffix
    return f"{base}-{new_id('x')[-8:]}"


async def create(
    session: AsyncSession,
    organization_id: str,
    title: str,
    blocks: list[Block],
    slug: str | None = None,
    *,
    definition: Definition | None = None,
    status: str = FormStatus.draft,
    created_at: datetime | None = None,
    form_id: str | None = None,
    embed_origins: list[str] | None = None,
    challenge: bool = False,
    retention_days: int | None = None,
    bounds: dict[str, Any] | None = None,
    one_response: OneResponse | None = None,
    password_hash: str | None = None,
    checked: compiled.Compiled | None = None,
) -> Form:
    """A new form (a draft unless told otherwise) and its version 1;
    `embed_origins` None: its organization's list frames it; `bounds`: its
    schedule, limit, messages and quotas (LIMIT_FIELDS), none by default;
    `checked`: its version, made from these blocks and definition and
    checked already (check_new)."""
    definition = definition or Definition()
    made = checked or compiled.Compiled(1, blocks, definition)
    if checked is None:
        check(made)
    bounds = bounds or {}
    _check_one_response(one_response, blocks)
    if slug is None:
        slug = await _free_slug(session, organization_id, title)
    elif await repository.slug_taken(session, organization_id, slug):
        raise SlugTaken(f"Another form of this organization has the slug '{slug}'.")
    created_at = created_at or utcnow()
    form = Form(
        id=form_id or new_id("frm"),
        organization_id=organization_id,
        title=title,
        slug=slug,
        status=status,
        version=1,
        blocks=dump_blocks(blocks),
        definition=_stored(definition),
        embed_origins=embed_origins,
        challenge=challenge,
        password_hash=password_hash,
        retention_days=retention_days,
        response_count=0,
        created_at=created_at,
        updated_at=created_at,
        **{name: bounds.get(name) for name in LIMIT_FIELDS},
    )
    check_limits(form, blocks)
    limits.settle(form, created_at)
    _set_one_response(form, one_response)
    try:
        async with session.begin_nested():
            session.add(form)
            session.add(_snapshot(form))
    except IntegrityError:
        # Another request took the slug between our check and this insert.
        raise SlugTaken(f"Another form of this organization has the slug '{slug}'.") from None
    _hold(session, form, made)
    await _record(session, form, EventType.form_created)
    return form


def check_new(body: FormCreate) -> compiled.Compiled:
    """A new form's first version, made and checked (`check`) before
    create_from takes it, with its schema: ValidationFailed for what is wrong."""
    definition = Definition(**{name: getattr(body, name) for name in DEFINITION_FIELDS})
    made = compiled.Compiled(1, body.blocks, definition)
    check(made)
    _ = made.schema
    return made


async def create_from(
    session: AsyncSession,
    organization_id: str,
    body: FormCreate,
    password_hash: str | None = None,
    *,
    checked: compiled.Compiled | None = None,
) -> Form:
    """A new draft made from a form's JSON (POST /v1/forms's body), by the
    API and the settings area alike; `password_hash`: a copy's; `checked`:
    its version from check_new."""
    if body.password is not None:
        password_hash = await user_service.hash_passphrase(body.password)
    definition = Definition(**{name: getattr(body, name) for name in DEFINITION_FIELDS})
    return await create(
        session,
        organization_id,
        body.title,
        body.blocks,
        body.slug,
        definition=definition,
        embed_origins=body.embed_origins,
        challenge=body.challenge,
        retention_days=body.retention_days,
        bounds=_bounds(body),
        one_response=body.one_response,
        password_hash=password_hash,
        checked=checked,
    )


# A form's schedule, limit, messages and quotas (form/limits.py): delivery
# settings, not part of its versions or its JSON.
LIMIT_FIELDS = (
    "opens_at",
    "closes_at",
    "max_submissions",
    "message_before_opening",
    "message_after_closing",
    "quotas",
)


def _bounds(body: FormCreate | FormUpdate) -> dict[str, Any]:
    """The limit fields `body` sent, as the form stores them (quotas as JSON,
    none as None)."""
    sent = body.model_fields_set
    found = {name: getattr(body, name) for name in LIMIT_FIELDS if name in sent}
    if "quotas" in found:
        quotas: list[Quota] | None = found["quotas"]
        found["quotas"] = [q.model_dump(by_alias=True, mode="json") for q in quotas or []] or None
    return found


_QUOTA_TYPES = (SingleChoice, Dropdown)


def check_limits(form: Form, blocks: list[Block]) -> None:
    """The form's schedule after its opening, and each quota on an option of
    one of its single-choice or dropdown questions, once each (ValidationFailed
    with the pointer of each problem)."""
    errors: list[dict[str, str]] = []
    opens, closes = form.opens_at, form.closes_at
    if opens is not None and closes is not None and closes <= opens:
        errors.append({"pointer": "/closesAt", "detail": "must be after opensAt"})
    questions = {block.key: block for block in blocks if isinstance(block, _QUOTA_TYPES)}
    seen: set[tuple[str, str]] = set()
    for index, quota in enumerate(form.quotas or []):
        question = questions.get(quota["question"])
        if question is None:
            errors.append(
                {
                    "pointer": f"/quotas/{index}/question",
                    "detail": "must be the key of one of the form's single-choice or "
                    "dropdown questions",
                }
            )
        elif quota["option"] not in question.values():
            errors.append(
                {
                    "pointer": f"/quotas/{index}/option",
                    "detail": "must be one of the question's options: "
                    + ", ".join(question.values()),
                }
            )
        elif (quota["question"], quota["option"]) in seen:
            errors.append(
                {"pointer": f"/quotas/{index}", "detail": "repeats a quota of the same option"}
            )
        seen.add((quota["question"], quota["option"]))
    if errors:
        raise ValidationFailed("The form's limits are invalid.", errors)


def exported(form: Form | FormVersion) -> dict[str, Any]:
    """The form (or one of its versions) as its JSON (POST /v1/forms's body,
    camelCase): what makes the same form again, in this organization or
    another. Without its slug, which is the organization's, made again from
    the title, and without the sites that may frame it, which are where the
    organization shows it, not what the form is. The builder's drafts are
    kept in this form."""
    return {"title": form.title, "blocks": form.blocks, **definition_of(form).dump()}


async def duplicate(session: AsyncSession, organization_id: str, form_id: str) -> Form:
    """A new draft with the form's blocks and settings (the sites that may
    frame it among them), titled as its copy; no submission goes with it."""
    original = await get(session, organization_id, form_id)
    title = f"Copy of {original.title}"[:TITLE_MAX].rstrip()
    copied = {
        **exported(original),
        "title": title,
        "embedOrigins": original.embed_origins,
        "challenge": original.challenge,
        "retentionDays": original.retention_days,
        # Its limits, but not its opening time (a copy starts as a draft of its
        # own), nor a closing time already past, which would keep it closed.
        "closesAt": isoformat_z(original.closes_at)
        if original.closes_at is not None and original.closes_at > utcnow()
        else None,
        "maxSubmissions": original.max_submissions,
        "messageBeforeOpening": original.message_before_opening,
        "messageAfterClosing": original.message_after_closing,
        "quotas": original.quotas,
        "oneResponse": admission_service.setting(
            original.one_response_by, original.one_response_question, original.one_response_hours
        ),
    }
    body = FormCreate.model_validate(copied)
    return await create_from(session, organization_id, body, original.password_hash)


async def _record(session: AsyncSession, form: Form, type_: EventType, **extra: object) -> None:
    """The form's event: the form as the API returns it (with `extra`), or
    thin when that is too large."""
    thin = {"id": form.id, "version": form.version, "updatedAt": isoformat_z(form.updated_at)}
    taken = await places_taken(session, form)
    await event_service.record(
        session,
        form.organization_id,
        type_,
        form.updated_at,
        {**detail(form, taken=taken), **extra},
        form_id=form.id,
        thin={**thin, "url": f"/v1/forms/{form.id}", **extra},
    )


def _snapshot(form: Form) -> FormVersion:
    return FormVersion(
        organization_id=form.organization_id,
        form_id=form.id,
        version=form.version,
        title=form.title,
        blocks=form.blocks,
        definition=form.definition,
        created_at=form.updated_at,
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """A form's blocks and definition as a save would write them, checked
    (`check`): made before the form's row is locked, from the form as it
    was at `version`, so that the save's costliest part holds no lock."""

    version: int
    # What the form's next version would be: its blocks and definition,
    # parsed, laid out and checked once.
    compiled: compiled.Compiled
    # As stored: dump_blocks(blocks) and _stored(definition).
    blocks_json: list[dict[str, Any]]
    stored: dict[str, Any] | None


def changes_content(changes: FormUpdate) -> bool:
    """Whether an update sends blocks or a part of the definition: a new
    version, to be checked."""
    sent = changes.model_fields_set
    return any(
        name in sent and getattr(changes, name) is not None
        for name in ("blocks", *DEFINITION_FIELDS)
    )


def checked_update(form: Form, changes: FormUpdate) -> Checked:
    """The blocks and definition `changes` give `form` (what they leave out
    kept), checked: ValidationFailed for what is wrong."""
    sent = changes.model_fields_set
    blocks = (
        changes.blocks
        if "blocks" in sent and changes.blocks is not None
        else BlockList.validate_python(form.blocks)
    )
    given = {
        name for name in DEFINITION_FIELDS if name in sent and getattr(changes, name) is not None
    }
    # Only what the changes leave as it is read again: a large form's rules,
    # replaced by the changes, are not validated twice.
    stored = form.definition or {}
    aliases = {name: Definition.model_fields[name].alias or name for name in DEFINITION_FIELDS}
    kept = Definition.model_validate(
        {
            aliases[name]: stored[aliases[name]]
            for name in aliases.keys() - given
            if aliases[name] in stored
        }
    )
    definition = Definition(
        **{
            name: getattr(changes, name) if name in given else getattr(kept, name)
            for name in DEFINITION_FIELDS
        }
    )
    made = compiled.Compiled(form.version + 1, blocks, definition)
    check(made)
    _ = made.schema  # made here, off the form's lock
    return Checked(form.version, made, dump_blocks(blocks), _stored(definition))


async def update(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    changes: FormUpdate,
    checked: Checked | None = None,
) -> Form:
    """Change the form as `changes` say. `checked`: its new blocks and
    definition made and checked before (checked_update), taken when the
    form is still at that version, else made again here."""
    # Hashed before the form's row is locked: argon2 takes its milliseconds.
    given = changes.password
    new_hash = None if given is None else await user_service.hash_passphrase(given)
    form = await get(session, organization_id, form_id, for_update=True)
    if form.status == FormStatus.archived:
        raise FormArchived("Archived forms are read-only.")
    sent = changes.model_fields_set
    status_before, before = form.status, _delivery(form)
    bounds_before = tuple(getattr(form, name) for name in LIMIT_FIELDS)
    if "status" in sent and changes.status is not None and changes.status != form.status:
        allowed = TRANSITIONS[form.status]
        if changes.status not in allowed:
            raise InvalidTransition(
                f"A {form.status} form cannot become {changes.status}; it can become: "
                + (", ".join(allowed) or "nothing"),
                allowedTransitions=list(allowed),
            )
        form.status = changes.status
    if "slug" in sent and changes.slug is not None and changes.slug != form.slug:
        if await repository.slug_taken(session, organization_id, changes.slug, form.id):
            raise SlugTaken(f"Another form of this organization has the slug '{changes.slug}'.")
        form.slug = changes.slug
    if "title" in sent and changes.title is not None:
        form.title = changes.title
    if "embed_origins" in sent:  # null included: back to the organization's list
        form.embed_origins = changes.embed_origins
    if changes.challenge is not None:
        form.challenge = changes.challenge
    for name, value in _bounds(changes).items():  # null included: none
        setattr(form, name, value)
    if "one_response" in sent:  # null included: no limit
        _set_one_response(form, changes.one_response)
    if "password" in sent:  # null included: none asked
        form.password_hash = new_hash
    if "retention_days" in sent:  # null included: kept until deleted
        form.retention_days = changes.retention_days
    new_version = False
    blocks_sent = "blocks" in sent and changes.blocks is not None
    new_blocks: list[Block] | None = None
    if changes_content(changes):
        if checked is None or checked.version != form.version:  # changed since: again
            checked = checked_update(form, changes)
        new_blocks, definition = checked.compiled.blocks, checked.compiled.definition
        resume_days = (form.definition or {}).get("resumeDays", RESUME_DAYS)
        blocks, stored = checked.blocks_json, checked.stored
        if blocks != form.blocks or stored != form.definition:
            form.blocks, form.definition = blocks, stored
            form.version += 1
            new_version = True
            _hold(session, form, checked.compiled)
        if definition.resume_days != resume_days:
            # Partials already saved are kept for the new time too, a shorter one included.
            await repository.keep_partials_for(
                session, organization_id, form.id, definition.resume_days, utcnow()
            )
    bounds_after = tuple(getattr(form, name) for name in LIMIT_FIELDS)
    checks_blocks = new_version or bounds_after != bounds_before or "one_response" in sent
    if checks_blocks and new_blocks is None:
        new_blocks = current(form).blocks
    if new_version or bounds_after != bounds_before:  # quotas checked against its blocks
        assert new_blocks is not None
        check_limits(form, new_blocks)
    if "one_response" in sent or blocks_sent:
        rule = admission_service.setting(
            form.one_response_by, form.one_response_question, form.one_response_hours
        )
        assert new_blocks is not None
        _check_one_response(None if rule is None else OneResponse.model_validate(rule), new_blocks)
    form.updated_at = utcnow()
    asked = changes.status if "status" in sent and changes.status is not None else None
    reason = limits.settle(form, form.updated_at, asked)
    if new_version:
        session.add(_snapshot(form))
    await session.flush()
    # Where it may be framed, who may answer it, how long its submissions are
    # kept or its schedule is not a version of the form, but a change all the same.
    bounds_after = tuple(getattr(form, n) for n in LIMIT_FIELDS)
    if _delivery(form) != before or bounds_after != bounds_before:
        await _record(session, form, EventType.form_updated)
    if form.status != status_before:
        await _status_changed(session, form, status_before, reason)
    return form


async def _status_changed(
    session: AsyncSession, form: Form, before: str, reason: limits.Reason | None
) -> None:
    moved: dict[str, Any] = {"from": before, "to": form.status}
    if reason is not None:
        moved["reason"] = reason.value
    await _record(session, form, EventType.form_status_changed, **moved)


async def settle(session: AsyncSession, organization_id: str, form_id: str, now: datetime) -> bool:
    """Bring the form's status in line with its schedule and limit at `now`,
    under its row lock, with its event (form/limits.py); whether it moved.
    The sweep, a post finding its form due, and the post that fills its
    last place call this: whichever comes first moves it, once."""
    form = await repository.get(session, organization_id, form_id, for_update=True)
    if form is None:
        return False
    before = form.status
    reason = limits.settle(form, now)
    if form.status == before:
        return False
    form.updated_at = now
    await session.flush()
    await _status_changed(session, form, before, reason)
    return True


async def settle_due(sessionmaker: Any, now: datetime | None = None) -> int:
    """The schedule's sweep: open and close the forms of every organization
    whose time has come, one transaction each; how many moved."""
    now = now or utcnow()
    async with sessionmaker() as session:
        due = (await session.execute(repository.due_statement(now))).all()
    moved = 0
    for organization_id, form_id in due:
        async with sessionmaker() as session:
            if await settle(session, organization_id, form_id, now):
                moved += 1
            await session.commit()
    return moved


async def largest(
    session: AsyncSession, least: int, limit: int
) -> Sequence[Row[str, str, int, int]]:
    """The forms of every organization with at least `least` submissions,
    the most first, up to `limit` (summary.service.warm): organization, id,
    submissions and change number."""
    return await repository.largest(session, least, limit)


def check_signing(changes: FormCreate | FormUpdate, signing: bool) -> None:
    """Refuse a password, or one response per cookie, email or IP, on a server
    without the key that signs its cookies and hashes its addresses (on
    PostgreSQL, FORMSAPI_SECRET_KEY): a server cannot keep them."""
    if signing:
        return
    keyed = changes.one_response is not None and changes.one_response.by != "invitation"
    if keyed or changes.password is not None:
        raise SecretKeyNeeded(
            "A password, and one response per cookie, email or IP, need the server's secret "
            "key: its operator must set FORMSAPI_SECRET_KEY."
        )


def _delivery(form: Form) -> tuple[object, ...]:
    """What a change of the form is seen by: its title, slug and version, and
    its delivery settings."""
    return (
        form.title,
        form.slug,
        form.version,
        form.embed_origins,
        form.challenge,
        form.one_response_by,
        form.one_response_question,
        form.one_response_hours,
        form.password_hash,
        form.retention_days,
    )


def _set_one_response(form: Form, rule: OneResponse | None) -> None:
    form.one_response_by = None if rule is None else rule.by
    form.one_response_question = None if rule is None else rule.question
    form.one_response_hours = None
    if rule is not None and rule.by == "ip":
        form.one_response_hours = rule.hours or DEFAULT_WINDOW_HOURS


def _check_one_response(rule: OneResponse | None, blocks: list[Block]) -> None:
    """A one-response-by-email rule names one of the form's email questions."""
    if rule is None or rule.by != "email":
        return
    emails = {q.key for q in questions(blocks) if q.type == "email"}
    if rule.question not in emails:
        raise ValidationFailed(
            "The form is invalid.",
            [
                {
                    "pointer": "/oneResponse/question",
                    "detail": "must be the key of one of the form's email questions"
                    + (f" ({', '.join(sorted(emails))})" if emails else " (it has none)"),
                }
            ],
        )


class HasSubmissions(Conflict):
    """The form has submissions, which deleting it would delete too. Archive it
    to keep them (PATCH its status to `archived`), or repeat the DELETE with
    `?deleteSubmissions=true` to delete both for good."""

    title = "Form has submissions"
    slug = "form-has-submissions"


async def delete(
    session: AsyncSession, organization_id: str, form_id: str, *, delete_submissions: bool
) -> None:
    """Delete a form; one with submissions only when the caller says so, and
    then their answers leave every event too. The row lock makes the count
    checked the count deleted: a submission arriving meanwhile waits, then
    finds no form."""
    form = await get(session, organization_id, form_id, for_update=True)
    if form.response_count and not delete_submissions:
        raise HasSubmissions(
            f"This form has {form.response_count} submissions. Archive it to keep them "
            "(PATCH with status 'archived'), or repeat with ?deleteSubmissions=true to "
            "delete the form and its submissions for good.",
            responseCount=form.response_count,
        )
    await repository.delete(session, organization_id, form.id)
    await event_service.erase_answers(session, organization_id, form.id)
    now = utcnow()
    gone = {"id": form.id, "title": form.title, "slug": form.slug}
    await event_service.record(
        session,
        organization_id,
        EventType.form_deleted,
        now,
        {**gone, "deleted": True, "deletedAt": isoformat_z(now)},
        form_id=form.id,
    )


async def compiled_version(
    session: AsyncSession, organization_id: str, form_id: str, version: int
) -> compiled.Compiled | None:
    """A version of the form ready to check or count answers (kept by the
    compiled cache); None when the form has no such version. Versions never
    change: the latest one compiled here is taken without a query."""
    known = compiled.cached(organization_id, form_id)
    if known is not None and known.version == version:
        return known
    snapshot = await repository.get_version(session, organization_id, form_id, version)
    if snapshot is None:
        return None
    return compiled.compile_version(
        organization_id, form_id, snapshot.version, snapshot.blocks, snapshot.definition
    )


async def version_of(
    read_sessionmaker: async_sessionmaker[ReadSession], fair: FairShare, form: Form
) -> compiled.Compiled:
    """The form's current version, compiled: this process's, else read from
    its snapshot and compiled once, on the fair-share thread (form/work.py)
    with all it needs made (the form's own row is read without its blocks
    where this is used: the public page and its uploads)."""
    known = compiled.cached(form.organization_id, form.id)
    if known is not None and known.version == form.version:
        return known
    async with read_sessionmaker() as session:
        snapshot = await repository.get_version(
            session, form.organization_id, form.id, form.version
        )
    if snapshot is None:  # its version went with the form, deleted meanwhile
        raise FormNotFound(form.id)
    build = partial(
        compiled.compile_ready,
        form.organization_id,
        form.id,
        snapshot.version,
        snapshot.blocks,
        snapshot.definition,
    )
    return await worked_out(fair, form.organization_id, cost.COMPILE_UNITS, build)


async def version_detail(
    session: ReadSession, organization_id: str, form_id: str, version: int
) -> dict[str, Any]:
    """The form as it was at `version`: its blocks and schema then."""
    form = await get(session, organization_id, form_id)
    snapshot = await repository.get_version(session, organization_id, form.id, version)
    if snapshot is None:
        raise NotFound(f"Form '{form_id}' has no version {version}; it is at {form.version}.")
    then = compiled.compile_version(
        organization_id, form.id, snapshot.version, snapshot.blocks, snapshot.definition
    )
    return {
        **detail(form, taken=await places_taken(session, form)),
        "version": snapshot.version,
        "blocks": snapshot.blocks,
        **_definition_wire(snapshot.definition, snapshot.blocks),
        "schema": then.schema_titled(snapshot.title),
    }
