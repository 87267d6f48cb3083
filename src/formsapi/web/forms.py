"""The forms of the active organization, one form's page, and its CSV download."""

import re
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import UploadFile

from formsapi.dependencies import check_json
from formsapi.errors import BadRequest, Forbidden, FormsAPIError, MalformedJSON, ValidationFailed
from formsapi.file import service as file_service
from formsapi.file.http import download, signed_link
from formsapi.form import gallery
from formsapi.form import service as form_service
from formsapi.form.schemas import MAX_RETENTION_DAYS, FormCreate, FormUpdate
from formsapi.kit.pagination import PageParams
from formsapi.kit.schemas import CleanStr
from formsapi.kit.time import parse_timestamp
from formsapi.language.blocks import FileUpload, questions
from formsapi.models import File
from formsapi.organization.service import parse_origins
from formsapi.services import services
from formsapi.spam import service as spam_service
from formsapi.submission import export
from formsapi.submission import service as submission_service
from formsapi.web.chart import PHONE, daily_bars
from formsapi.web.context import (
    SECURITY_HEADERS,
    DbDep,
    FormText,
    PathId,
    ReadDep,
    back_with,
    render,
)
from formsapi.web.pages import Managed, PageRoute, Section, keep

PAGE = "/forms"


def _back(request: Request, error: FormsAPIError) -> str:
    """Where a refused form goes back to: the new form's page (the forms for
    a role that may not open it), the builder's page it was posted from, or
    the page of the form it was posted from."""
    path = request.url.path
    if path == f"{PAGE}/new":
        return PAGE if isinstance(error, Forbidden) else path
    if builder := _builder_back(path):
        return builder
    if "/reports" in path:  # a report link's post: back to the form's summary
        return path.partition("/reports")[0] + "/summary"
    for action in (
        "/duplicate",
        "/status",
        "/settings",
        "/embedding",
        "/challenge",
        "/retention",
        "/limits",
        "/admission",
    ):
        if path.endswith(action):
            return path.removesuffix(action)
    return PAGE


def _builder_back(path: str) -> str | None:
    """The builder's page a refused post goes back to: the one it came from
    (a block's, the JSON's, the review's, the versions') or the builder."""
    found = re.fullmatch(r"(/forms/[^/]+)/(edit|publish|versions)(/.*)?", path)
    if found is None:
        return None
    base, part, rest = found[1], found[2], found[3] or ""
    if part != "edit":
        return f"{base}/{part}"
    block = re.fullmatch(r"/blocks/(\d+)(/condition/.*)?", rest)
    if block:
        return f"{base}/edit/blocks/{block[1]}"
    if rest in ("/json", "/translations"):
        return f"{base}/edit{rest}"
    return f"{base}/edit"


SECTION = Section(
    "forms",
    "Forms",
    PAGE,
    back=_back,
    fields={
        "opensAt": "Opens at",
        "closesAt": "Closes at",
        "maxSubmissions": "Maximum submissions",
        "messageBeforeOpening": "Message before opening",
        "messageAfterClosing": "Message after closing",
    },
)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

PER_PAGE = 50
MAX_JSON = 500_000  # characters of a form's JSON (the API's body limit is 1 MiB)
KEPT_JSON = 100_000  # shown again after a refusal when no longer than this
MAX_PROBLEMS = 50
MAX_ORIGINS_TEXT = 10_000  # characters: 20 origins of the longest host names fit
RECENT = 20
TABLE_COLUMNS = 5  # answers shown in the recent submissions table; the CSV has them all


@router.get("")
async def forms(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    rows, total = await form_service.list_page(
        session, managed.organization.id, PageParams(page=page, limit=PER_PAGE)
    )
    return render(
        request,
        "forms/forms.html",
        managed.viewer,
        section=SECTION.name,
        forms=rows,
        page=page,
        pages=max(1, -(-total // PER_PAGE)),
        total=total,
    )


@router.get("/new")
async def new_form_page(request: Request, managed: OrganizationDep) -> Response:
    may_edit(managed)
    flash = managed.viewer.flash
    return render(
        request,
        "forms/new.html",
        managed.viewer,
        section=SECTION.name,
        templates=gallery.TEMPLATES,
        how=flash.get("how", "blank"),
        title=flash.get("title", ""),
        json_text=flash.get("json", ""),
        problems=flash.get("problems", []),
    )


@router.post("/new")
async def new_form(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    how: Annotated[str, Form(max_length=20)] = "blank",
    title: FormText = "",
    template: Annotated[str, Form(max_length=100)] = "",
    # Bounded by the request's body limit; over MAX_JSON, said on the page.
    json_text: Annotated[str, Form(alias="json")] = "",
) -> Response:
    """A new draft: blank, from a template of the gallery, or from a form's
    JSON pasted or uploaded (the API's own format)."""
    may_edit(managed)
    organization_id = managed.organization.id
    keep(request, how=how, title=title)
    if how == "template":
        if template not in gallery.BY_NAME:
            raise BadRequest("Choose one of the templates.")
        form = await form_service.create_from(session, organization_id, gallery.body(template))
    elif how == "json":
        text = await _posted_json(request, json_text)
        keep(request, json=text if len(text) <= KEPT_JSON else "")
        body = _form_json(request, text)
        try:
            form = await form_service.create_from(session, organization_id, body)
        except ValidationFailed as error:  # the logic and keys, checked as the API does
            document = orjson.loads(text)
            placed = [
                (pointer_path(document, problem["pointer"]), problem["detail"])
                for problem in error.extensions["errors"]
            ]
            raise _problems(request, document, placed) from None
    else:
        if not title.strip():
            raise BadRequest("Give the form a title.")
        try:
            body = FormCreate(title=title.strip())
        except ValidationError as error:
            raise BadRequest(f"The title: {error.errors()[0]['msg']}.") from None
        form = await form_service.create_from(session, organization_id, body)
    return await back_with(
        session, managed.viewer, f"{PAGE}/{form.id}", notice=f"Draft “{form.title}” created."
    )


@router.get("/{form_id}/form.json")
async def download_json(session: ReadDep, managed: OrganizationDep, form_id: PathId) -> Response:
    form = await form_service.get(session, managed.organization.id, form_id)
    body = orjson.dumps(form_service.exported(form), option=orjson.OPT_INDENT_2)
    return Response(
        body,
        media_type="application/json",
        headers={
            **SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="{form.slug}.json"',
        },
    )


@router.post("/{form_id}/duplicate")
async def duplicate(session: DbDep, managed: OrganizationDep, form_id: PathId) -> Response:
    may_edit(managed)
    copy = await form_service.duplicate(session, managed.organization.id, form_id)
    return await back_with(
        session, managed.viewer, f"{PAGE}/{copy.id}", notice=f"Draft “{copy.title}” created."
    )


# What each status change is called on a form's page, and what it does.
STATUS_ACTIONS = {
    "published": ("Publish", "Respondents can answer it at its public page and over the API."),
    "closed": ("Close", "It stops taking answers; its submissions stay. You can reopen it."),
    "archived": ("Archive", "It becomes read-only for good: it takes no answer and no change."),
}


@router.post("/{form_id}/status")
async def change_status(
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    status: Annotated[str, Form(max_length=20)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Publish, close, reopen or archive, as PATCH /v1/forms/{id} does; an
    archive, which cannot be undone, only when confirmed."""
    may_edit(managed)
    if status not in STATUS_ACTIONS:
        raise BadRequest("Choose publish, close or archive.")
    if status == "archived" and confirm != "yes":
        raise BadRequest("Tick the box to confirm: an archived form cannot be changed again.")
    form = await form_service.update(
        session, managed.organization.id, form_id, FormUpdate(status=status)
    )
    return await back_with(
        session, managed.viewer, f"{PAGE}/{form.id}", notice=f"“{form.title}” is {form.status}."
    )


@router.post("/{form_id}/settings")
async def change_settings(
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    title: FormText = "",
    slug: Annotated[str, Form()] = "",  # checked by FormUpdate, said on the page
) -> Response:
    """A form's title and slug, checked as the API checks them."""
    may_edit(managed)
    try:
        changes = FormUpdate(title=title.strip(), slug=slug.strip())
    except ValidationError as error:
        problem = error.errors()[0]
        raise BadRequest(f"The {problem['loc'][0]}: {problem['msg']}.") from None
    form = await form_service.update(session, managed.organization.id, form_id, changes)
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice="Saved.")


@router.post("/{form_id}/challenge")
async def change_challenge(
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    challenge: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Whether the form's hosted page asks for a proof of work, set through
    the service PATCH /v1/forms/{id} uses (an unchecked box sends nothing)."""
    may_edit(managed)
    on = challenge == "on"
    form = await form_service.update(
        session, managed.organization.id, form_id, FormUpdate(challenge=on)
    )
    notice = (
        "This form's page now asks browsers for a proof of work before taking answers."
        if on
        else "This form's page no longer asks browsers for a proof of work."
    )
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice=notice)


# How a form knows one respondent from another ("": it does not).
ONCE_CHOICES = ("", "cookie", "email", "ip", "invitation")


@router.post("/{form_id}/admission")
async def change_admission(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    once_by: Annotated[str, Form(max_length=20)] = "",
    once_question: Annotated[str, Form(max_length=100)] = "",
    once_hours: Annotated[str, Form(max_length=10)] = "",
    password: Annotated[str, Form(max_length=200)] = "",
    unlock: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Who may answer the form's hosted page, and how often: one response
    per browser, email address, network address or invitation link, and a
    password before its first page, set through the service PATCH
    /v1/forms/{id} uses (an empty password field changes nothing)."""
    may_edit(managed)
    if once_by not in ONCE_CHOICES:
        raise BadRequest("Choose how many responses each person may send.")
    rule: dict[str, object] | None = None
    if once_by:
        rule = {"by": once_by}
        if once_by == "email":
            rule["question"] = once_question
        if once_by == "ip":
            if not (once_hours.isascii() and once_hours.isdigit()):
                raise BadRequest("The hours: a whole number, from 1.")
            rule["hours"] = int(once_hours)
    fields: dict[str, object] = {"one_response": rule}
    if unlock == "on":
        fields["password"] = None
    elif password:
        fields["password"] = password
    try:
        changes = FormUpdate.model_validate(fields)
    except ValidationError as error:
        problem = error.errors()[0]
        where = "The password" if "password" in problem["loc"] else "Responses per person"
        raise BadRequest(f"{where}: {problem['msg']}.") from None
    form_service.check_signing(changes, services(request).secret_box is not None)
    form = await form_service.update(session, managed.organization.id, form_id, changes)
    notice = {
        "": "Anyone may answer this form as often as they like.",
        "cookie": "This form now takes one response per browser.",
        "email": "This form now takes one response per email address.",
        "ip": f"This form now takes one response per network address every "
        f"{form.one_response_hours} hours.",
        "invitation": "This form now takes answers through invitation links only.",
    }[once_by]
    if form.password_hash is not None:
        notice += " Its page asks for a password first."
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice=notice)


@router.post("/{form_id}/retention")
async def change_retention(
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    retention: Annotated[str, Form(max_length=20)] = "",
    days: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    """How long the form's submissions are kept: until deleted, or a number
    of days, set through the service PATCH /v1/forms/{id} uses."""
    may_edit(managed)
    kept: int | None = None
    if retention == "days":
        text = days.strip()
        if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_RETENTION_DAYS):
            raise BadRequest(f"The days: a whole number from 1 to {MAX_RETENTION_DAYS}.")
        kept = int(text)
    elif retention != "forever":
        raise BadRequest("Choose to keep submissions until deleted or for a number of days.")
    form = await form_service.update(
        session, managed.organization.id, form_id, FormUpdate(retention_days=kept)
    )
    notice = (
        "Submissions are now kept until deleted."
        if kept is None
        else f"Submissions older than {kept} day{'s' * (kept != 1)} are now deleted "
        "within the hour."
    )
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice=notice)


def _utc_field(name: str, text: str) -> datetime | None:
    """A time typed in the panel's `datetime-local` field, read as UTC (the
    panel says so); empty: none."""
    text = text.strip()
    if not text:
        return None
    try:
        return parse_timestamp(text)
    except ValueError:
        raise BadRequest(f"{name}: give a date and time such as 2027-03-01T09:00.") from None


@router.post("/{form_id}/limits")
async def change_limits(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    opens_at: Annotated[str, Form(max_length=40)] = "",
    closes_at: Annotated[str, Form(max_length=40)] = "",
    max_submissions: Annotated[str, Form(max_length=20)] = "",
    message_before_opening: Annotated[str, Form(max_length=2000)] = "",
    message_after_closing: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """When the form opens and closes, how many submissions it takes, and
    what its page says before and after, set through the service PATCH
    /v1/forms/{id} uses (an empty field: none)."""
    may_edit(managed)
    keep(
        request,
        opens_at=opens_at,
        closes_at=closes_at,
        max_submissions=max_submissions,
        message_before_opening=message_before_opening,
        message_after_closing=message_after_closing,
    )
    limit = max_submissions.strip()
    if limit and not (limit.isascii() and limit.isdigit()):
        raise BadRequest("Maximum submissions: a whole number, or empty for no limit.")
    try:
        changes = FormUpdate(
            opens_at=_utc_field("Opens at", opens_at),
            closes_at=_utc_field("Closes at", closes_at),
            max_submissions=int(limit) if limit else None,
            message_before_opening=message_before_opening.strip() or None,
            message_after_closing=message_after_closing.strip() or None,
        )
    except ValidationError as error:
        problem = error.errors()[0]
        label = SECTION.fields.get(_camel(str(problem["loc"][0])), str(problem["loc"][0]))
        raise BadRequest(f"{label}: {problem['msg']}.") from None
    form = await form_service.update(session, managed.organization.id, form_id, changes)
    notice = "Saved." + (
        f" The form is {form.status} now." if form.status in ("closed", "published") else ""
    )
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice=notice)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# A form's framing: its organization's list, or a list of its own.
EMBEDDING_CHOICES = ("organization", "own")


@router.post("/{form_id}/embedding")
async def change_embedding(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    form_id: PathId,
    embedding: Annotated[str, Form(max_length=20)] = "",
    # Checked here, and said on the page (bounded by the request's body limit).
    origins: Annotated[CleanStr, Form()] = "",
) -> Response:
    """Which sites may show the form's hosted page in a frame: its
    organization's list, or its own (one origin a line, checked as the
    organization's are), set through the service PATCH /v1/forms/{id} uses."""
    may_edit(managed)
    if embedding not in EMBEDDING_CHOICES:
        raise BadRequest("Choose the organization's list or this form's own.")
    if len(origins) > MAX_ORIGINS_TEXT:
        raise BadRequest(f"The origins are over {MAX_ORIGINS_TEXT:,} characters.")
    keep(request, embedding=embedding, origins=origins)  # shown again if refused
    own = parse_origins(origins) if embedding == "own" else None
    form = await form_service.update(
        session, managed.organization.id, form_id, FormUpdate(embed_origins=own)
    )
    if own is None:
        notice = "This form follows the organization's list of sites that may frame it."
    elif own:
        notice = f"This form may be shown in a frame on {len(own)} site{'s' * (len(own) != 1)}."
    else:
        notice = "No site may show this form in a frame."
    return await back_with(session, managed.viewer, f"{PAGE}/{form.id}", notice=notice)


def may_edit(managed: Managed) -> None:
    if not managed.viewer.can_edit_forms:
        raise Forbidden(
            f"Your role in {managed.organization.name} ({managed.role}) reads forms; "
            "editors, admins and owners make and change them."
        )


async def _posted_json(request: Request, pasted: str) -> str:
    """The form's JSON: the file chosen, else the text pasted."""
    upload = (await request.form()).get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read(MAX_JSON + 1)
        if len(raw) > MAX_JSON:
            raise BadRequest(f"The file is over {MAX_JSON:,} bytes.")
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BadRequest("The file is not UTF-8 text.") from None
    if not pasted.strip():
        raise BadRequest("Paste the form's JSON, or choose a file.")
    if len(pasted) > MAX_JSON:
        raise BadRequest(f"The JSON pasted is over {MAX_JSON:,} characters.")
    return pasted


def _form_json(request: Request, text: str) -> FormCreate:
    """`text` as POST /v1/forms would take it; refused with each problem
    placed where it is (kept for the page), as the API would point at it."""
    try:
        document = check_json(text.encode())
    except MalformedJSON as error:
        raise BadRequest(error.detail) from None
    try:
        return FormCreate.model_validate(document)
    except ValidationError as error:
        placed = [(list(e["loc"]), str(e["msg"])) for e in error.errors()]
        raise _problems(request, document, placed) from None


def _problems(request: Request, document: Any, placed: list[tuple[list[Any], str]]) -> BadRequest:
    """The refusal of a form's JSON whose problems are `placed` (a path into
    `document`, what is wrong there), each kept for the page with the block
    it concerns named."""
    problems = [{"where": where(document, path), "detail": detail} for path, detail in placed]
    keep(request, problems=problems[:MAX_PROBLEMS])
    count = len(problems)
    return BadRequest(
        f"The form's JSON has {count} problem{'' if count == 1 else 's'}, listed below it."
    )


def pointer_path(document: Any, pointer: str) -> list[Any]:
    """A JSON pointer's parts into `document`, as numbers where they index
    a list (a key of digits stays a key)."""
    path: list[Any] = []
    node = document
    for token in pointer.split("/")[1:]:
        part: Any = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            index = int(part) if part.isascii() and part.isdigit() and len(part) < 10 else -1
            part = index if 0 <= index < len(node) else part
            node = node[part] if isinstance(part, int) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
        path.append(part)
    return path


def where(document: Any, path: list[Any]) -> str:
    """A problem's place in a form's JSON, as a person reads it: "Block 3
    (“Email”), options 2, value" for ["blocks", 2, "options", 1, "value"]."""
    if not path:
        return "The form"
    head, *rest = path
    words = [str(head)]
    if head in ("blocks", "endings", "logic", "variables", "hiddenFields") and rest:
        index, *rest = rest
        if isinstance(index, int):
            items = document.get(head) if isinstance(document, dict) else None
            item = items[index] if isinstance(items, list) and 0 <= index < len(items) else None
            name = {"blocks": "Block", "endings": "Ending", "logic": "Rule"}.get(head, head)
            words = [f"{name} {index + 1}"]
            if isinstance(item, dict):
                label = item.get("title") or item.get("text") or item.get("key")
                if isinstance(label, str) and label:
                    words[0] += f" (“{label[:60]}”)"
                # A block's type names the union's branch pydantic tried: not a place.
                if rest and rest[0] == item.get("type"):
                    rest = rest[1:]
    words += [str(part + 1) if isinstance(part, int) else str(part) for part in rest]
    return ", ".join(words)


@router.get("/{form_id}")
async def form_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    form = await form_service.get(session, managed.organization.id, form_id)
    organization_id = form.organization_id
    blocks = form_service.current(form).blocks
    asked = questions(blocks)
    recent = await submission_service.recent(session, organization_id, form.id, RECENT)
    days = await export.daily_counts(session, organization_id, form.id)
    named = [
        file_id
        for submission in recent
        for file_id in file_service.answered_files(blocks, submission.answers)
    ]
    files = await file_service.named(session, organization_id, form.id, named) if named else []
    await services(request).refusals.flush()  # this process's held counts, as the API's list
    refusals = await spam_service.refusals(session, organization_id, form.id)
    kept = managed.viewer.flash  # what a refused embedding post had chosen and typed
    own = form.embed_origins
    return render(
        request,
        "forms/form.html",
        managed.viewer,
        section=SECTION.name,
        form=form,
        blocks=blocks,
        table_questions=asked[:TABLE_COLUMNS],
        more_columns=max(0, len(asked) - TABLE_COLUMNS),
        recent=recent,
        chart=daily_bars(days),
        phone_chart=daily_bars(days, *PHONE),
        public_url=f"/f/{form.id}" if form.status in ("published", "closed") else None,
        file_keys={q.key for q in asked if isinstance(q, FileUpload)},
        files={file.id: file for file in files},
        embedding=kept.get("embedding", "organization" if own is None else "own"),
        embed_origins_text=kept.get("origins", "\n".join(own or [])),
        refusals=refusals,
        refusal_days=spam_service.DEFAULT_DAYS,
        limits=_limits_shown(form, kept),
        quotas=form_service.detail(form, taken=await form_service.places_taken(session, form))[
            "quotas"
        ]
        if form.quotas
        else [],
        email_questions=[q for q in asked if q.type == "email"],
        signing=services(request).secret_box is not None,
        transitions=[
            (
                status,
                "Reopen"
                if form.status == "closed" and status == "published"
                else STATUS_ACTIONS[status][0],
                STATUS_ACTIONS[status][1],
            )
            for status in form_service.TRANSITIONS[form.status]
        ],
    )


def _local(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def _limits_shown(form: Any, kept: dict[str, Any]) -> dict[str, str]:
    """The schedule and limit fields as the panel shows them: what a refused
    post had typed, else what the form has."""
    now = {
        "opens_at": _local(form.opens_at),
        "closes_at": _local(form.closes_at),
        "max_submissions": "" if form.max_submissions is None else str(form.max_submissions),
        "message_before_opening": form.message_before_opening or "",
        "message_after_closing": form.message_after_closing or "",
    }
    return {name: str(kept.get(name, value)) for name, value in now.items()}


async def _file(session: AsyncSession, managed: Managed, form_id: str, file_id: str) -> File:
    file = await file_service.get(session, managed.organization.id, file_id)
    if file.form_id != form_id:
        raise file_service.FileNotFound(file_id)
    return file


@router.get("/{form_id}/files/{file_id}")
async def download_file(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId, file_id: PathId
) -> Response:
    """A file an answer names, downloaded by a member."""
    file = await _file(session, managed, form_id, file_id)
    await session.close()
    return await download(services(request).storages, file)


# What a member may choose for a link's life, in seconds, and how it reads.
LINK_LIVES = {3600: "1 hour", 86400: "1 day", 7 * 86400: "7 days"}


@router.get("/{form_id}/files/{file_id}/link")
async def file_link_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId, file_id: PathId
) -> Response:
    file = await _file(session, managed, form_id, file_id)
    return render(
        request,
        "forms/file_link.html",
        managed.viewer,
        section=SECTION.name,
        file=file,
        lives=LINK_LIVES,
    )


@router.post("/{form_id}/files/{file_id}/link")
async def make_file_link(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    form_id: PathId,
    file_id: PathId,
    seconds: Annotated[int, Form()] = 3600,
) -> Response:
    """A signed link to the file for someone without an account, for the
    time chosen; shown on this page only."""
    file = await _file(session, managed, form_id, file_id)
    if seconds not in LINK_LIVES:
        raise BadRequest("Choose how long the link works.")
    url, expires_at = signed_link(request, file.id, seconds)
    return render(
        request,
        "forms/file_link.html",
        managed.viewer,
        section=SECTION.name,
        file=file,
        lives=LINK_LIVES,
        link=url,
        expires_at=expires_at,
    )


@router.get("/{form_id}/submissions.csv")
async def download_csv(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    form = await form_service.get(session, managed.organization.id, form_id)
    organization_id = form.organization_id
    keys = await export.columns(session, organization_id, form.id)
    return StreamingResponse(
        export.csv_chunks(
            services(request).read_sessionmaker, organization_id, form.id, form.change_seq, keys
        ),
        media_type="text/csv; charset=utf-8",
        headers={
            **SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="{export.filename(form.slug)}"',
            "X-Change-Seq": str(form.change_seq),
        },
    )
