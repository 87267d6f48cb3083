from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, TypeVar

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from formsapi.api_key.principal import Principal
from formsapi.api_key.scopes import Scope
from formsapi.dependencies import (
    GuardedRoute,
    IdempotencyKeyHeader,
    PrincipalDep,
    ReadSessionDep,
    SessionDep,
    before_body,
    requires,
)
from formsapi.errors import problem_responses
from formsapi.form import service
from formsapi.form.schemas import FormCreate, FormDetail, FormSummary, FormUpdate
from formsapi.form.work import worked_out
from formsapi.idempotency.service import Outcome
from formsapi.kit.pagination import Page
from formsapi.language.cost import COMPILE_UNITS
from formsapi.routing import (
    ERRORS,
    ERRORS_404,
    ERRORS_WRITE,
    FormId,
    PageDep,
    idempotent,
    json,
    replay,
)
from formsapi.services import services

T = TypeVar("T")
router = APIRouter(prefix="/v1/forms", tags=["Forms"], route_class=GuardedRoute)


async def _turn(request: Request, principal: PrincipalDep) -> AsyncIterator[None]:
    """An organization's form writes take turns in each process, each until
    its commit: one organization saving a large form from many clients has
    one save under way here, and no more of its writes queue for the
    database's lock (all of SQLite's writers wait for each) ahead of others'."""
    async with services(request).form_writes.turn(principal.organization_id):
        yield


# Before the session: its exit, after the session's commit.
TurnDep = Annotated[None, Depends(_turn, scope="function")]


def _size(request: Request) -> int:
    """A save's body's size: about what it takes in µs to check and write. A
    body sent in chunks says none: taken as a large one."""
    length = request.headers.get("content-length")
    return int(length) if length and length.isdigit() else COMPILE_UNITS


async def _worked(request: Request, principal: Principal, work: Callable[[], T]) -> T:
    """A form save's CPU work where a costly form's runs (form/work.py)."""
    fair = services(request).fair_share
    return await worked_out(fair, principal.organization_id, _size(request), work)


async def _large_saves(request: Request, principal: Principal) -> None:
    """429 past the organization's allowance of large saves a minute
    (FormSaveThrottle), before the body is read: its forms' saves take the
    server's time in turn with everyone's, not all of it, and a save refused
    costs no parsing."""
    await services(request).form_saves.take(principal.organization_id, _size(request))


@router.get(
    "",
    response_model=Page[FormSummary],
    responses=ERRORS,
    openapi_extra=requires(Scope.forms_read),
)
async def list_forms(principal: PrincipalDep, session: ReadSessionDep, page: PageDep) -> Response:
    """The forms of the key's organization, newest first."""
    body = await service.page_document(session, principal.organization_id, page)
    return Response(body, media_type="application/json")


@router.get(
    "/{formId}",
    response_model=FormDetail,
    responses=ERRORS_404,
    openapi_extra=requires(Scope.forms_read),
)
async def get_form(
    principal: PrincipalDep,
    session: ReadSessionDep,
    form_id: FormId,
    version: Annotated[
        int | None,
        Query(ge=1, le=2**31 - 1, description="An earlier version of the form's blocks."),
    ] = None,
    lang: Annotated[
        str | None,
        Query(
            max_length=35,
            description="A language of the form's (`languages`): the title, blocks and endings "
            "in it, each text a translation leaves out in the form's own.",
        ),
    ] = None,
) -> Response:
    """One form: its fields, its ordered question and layout blocks, and the JSON
    Schema (draft 2020-12) of the answers object those blocks define."""
    if version is not None:
        return json(
            await service.version_detail(session, principal.organization_id, form_id, version)
        )
    form = await service.get(session, principal.organization_id, form_id)
    shown = service.detail(form, lang, await service.places_taken(session, form))
    response = json(shown)
    response.headers["Content-Language"] = shown["contentLanguage"]
    return response


@router.post(
    "",
    status_code=201,
    response_model=FormDetail,
    responses=problem_responses(400, 401, 403, 408, 409, 413, 415, 422, 429),
    openapi_extra=requires(Scope.forms_write),
)
@before_body(_large_saves)
async def create_form(
    principal: PrincipalDep,
    turn: TurnDep,
    session: SessionDep,
    request: Request,
    body: FormCreate,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Create a form. It starts as a draft at version 1; publish it with PATCH."""
    service.check_signing(body, services(request).secret_box is not None)
    # Checked before the transaction (and, for a large form, off the loop).
    made = await _worked(request, principal, partial(service.check_new, body))

    async def work() -> Outcome:
        form = await service.create_from(session, principal.organization_id, body, checked=made)
        taken = await service.places_taken(session, form)
        shown = await _worked(request, principal, partial(service.detail, form, taken=taken))
        return Outcome(201, orjson.dumps(shown), f"/v1/forms/{form.id}")

    sent = body.model_dump(mode="json", by_alias=True)
    return replay(
        await idempotent(session, principal.organization_id, idempotency_key, request, sent, work)
    )


@router.patch(
    "/{formId}",
    response_model=FormDetail,
    responses=ERRORS_WRITE,
    openapi_extra=requires(Scope.forms_write),
)
@before_body(_large_saves)
async def update_form(
    principal: PrincipalDep,
    turn: TurnDep,
    session: SessionDep,
    request: Request,
    form_id: FormId,
    body: FormUpdate,
) -> Response:
    """Change a form's title, slug, blocks, status, the sites that may frame
    its hosted page (`embedOrigins`), or when it opens and closes, how many
    submissions it takes and its quotas; only the fields sent change.

    Changing the blocks makes a new version (older ones stay readable with
    `?version=N`); changing `embedOrigins` does not (`null`: back to the
    organization's list). Status moves draft -> published, published ->
    closed, closed -> published, and any -> archived; an archived form is
    read-only. A transition not allowed answers 409 naming the allowed ones;
    publishing a form whose closing time has passed, or that has
    `maxSubmissions` already, answers 409 `form-ended`.

    `oneResponse` and `password` are delivery settings too (no new version):
    who may answer the hosted page, and how often."""
    service.check_signing(body, services(request).secret_box is not None)
    checked = None
    if service.changes_content(body):
        # The new version made and checked before the form's row is locked
        # (and, for a large form, off the loop); taken if it is still current.
        async with services(request).read_sessionmaker() as reader:
            seen = await service.get(reader, principal.organization_id, form_id)
        checked = await _worked(request, principal, partial(service.checked_update, seen, body))
    form = await service.update(session, principal.organization_id, form_id, body, checked)
    taken = await service.places_taken(session, form)
    return json(await _worked(request, principal, partial(service.detail, form, taken=taken)))


@router.delete(
    "/{formId}", status_code=204, responses=ERRORS_WRITE, openapi_extra=requires(Scope.forms_write)
)
async def delete_form(
    principal: PrincipalDep,
    session: SessionDep,
    form_id: FormId,
    delete_submissions: Annotated[
        bool,
        Query(
            alias="deleteSubmissions",
            description="Required to delete a form that has submissions: they go too.",
        ),
    ] = False,
) -> Response:
    """Delete a form for good. A form with submissions is refused (409) unless
    `deleteSubmissions=true`; archive it (PATCH status) to keep them instead."""
    await service.delete(
        session, principal.organization_id, form_id, delete_submissions=delete_submissions
    )
    return Response(status_code=204)
