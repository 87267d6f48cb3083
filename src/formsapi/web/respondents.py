"""The Respondents' data page: owners and admins find everything kept of one
respondent (by the answer to any email question, or a hidden field's value),
download it as the API exports it, and erase it all after a confirmation.
Everything goes through formsapi.respondent.service, as the API does; each
download and erasure leaves an audit entry listed on the page.

The value searched for travels in form posts, never in a URL: URLs end up
in access logs and browser histories."""

import re
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest
from formsapi.form import service as form_service
from formsapi.kit.schemas import CleanStr
from formsapi.language.blocks import KEY_PATTERN
from formsapi.language.definition import HIDDEN_VALUE_MAX
from formsapi.member import service as member_service
from formsapi.respondent import audit as audit_service
from formsapi.respondent import service
from formsapi.respondent.audit import Actor
from formsapi.respondent.service import Person
from formsapi.web.context import SECURITY_HEADERS, DbDep, ReadDep, back_with, render
from formsapi.web.pages import Managed, PageRoute, Section, keep

PAGE = "/settings/respondents"
SECTION = Section(
    "respondents",
    "Respondents' data",
    PAGE,
    may_open=member_service.can_manage_organization,
    closed="Only owners and admins find, download and erase a respondent's data in {organization}.",
)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)

By = Annotated[str, Form(max_length=10)]
Value = Annotated[CleanStr, Form(max_length=HIDDEN_VALUE_MAX)]
Field = Annotated[str, Form(max_length=64)]


def _person(request: Request, by: str, value: str, field: str) -> Person:
    """Whom the form names, or a refusal that says how to name one."""
    keep(request, by=by, value=value, field=field)
    value = value.strip()
    if not value:
        raise BadRequest("Type the email address or the hidden field's value to look for.")
    if by == "email":
        if len(value) > 254:
            raise BadRequest("An email address has at most 254 characters.")
        return Person(value)
    if by == "field":
        if not re.fullmatch(KEY_PATTERN, field):
            raise BadRequest("Choose one of your forms' hidden fields.")
        return Person(value, field)
    raise BadRequest("Find by the email address or by a hidden field.")


def _actor(managed: Managed) -> Actor:
    return Actor("member", managed.viewer.user.id, managed.viewer.user.email)


async def _page(
    request: Request,
    session: AsyncSession,
    managed: Managed,
    status: int = 200,
    **context: object,
) -> Response:
    organization_id = managed.organization.id
    entries = await audit_service.recent(session, organization_id, 20)
    fields = await service.hidden_fields(session, organization_id)
    flash = managed.viewer.flash
    return render(
        request,
        "respondents/respondents.html",
        managed.viewer,
        status,
        section=SECTION.name,
        entries=entries,
        hidden_fields=fields,
        by=context.pop("by", flash.get("by", "email")),
        value=context.pop("value", flash.get("value", "")),
        field=context.pop("field", flash.get("field", "")),
        **context,
    )


@router.get("")
async def respondents(request: Request, session: ReadDep, managed: OrganizationDep) -> Response:
    return await _page(request, session, managed)


@router.post("/find")
async def find(
    request: Request,
    session: ReadDep,
    managed: OrganizationDep,
    by: By = "email",
    value: Value = "",
    field: Field = "",
) -> Response:
    """The submissions and partial responses found, listed without their
    answers, with what downloads or erases them (a post's answer: the value
    stays out of the URL)."""
    who = _person(request, by, value, field)
    found = await service.find(session, managed.organization.id, who)
    form_ids = {s.form_id for s in found.submissions} | {p.form_id for p in found.partials}
    titles = await form_service.titles(session, managed.organization.id, form_ids)
    return await _page(
        request,
        session,
        managed,
        found=found,
        titles=titles,
        searched=True,
        by=by,
        value=who.value,
        field=field,
    )


@router.post("/export")
async def export(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    by: By = "email",
    value: Value = "",
    field: Field = "",
) -> Response:
    """The respondent's data as POST /v1/respondents/export returns it, to download."""
    who = _person(request, by, value, field)
    data = await service.export(session, managed.organization.id, who, _actor(managed))
    headers = {
        **SECURITY_HEADERS,
        "Content-Disposition": 'attachment; filename="respondent-data.json"',
        "Cache-Control": "no-store",
    }
    return Response(orjson.dumps(data), media_type="application/json", headers=headers)


@router.post("/erase")
async def erase(
    request: Request,
    session: DbDep,
    managed: OrganizationDep,
    by: By = "email",
    value: Value = "",
    field: Field = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Delete everything found, as POST /v1/respondents/erase does, once confirmed."""
    who = _person(request, by, value, field)
    if confirm != "yes":
        raise BadRequest("Tick the box to confirm: erased answers cannot be brought back.")
    erased = await service.erase(session, managed.organization.id, who, _actor(managed))
    notice = (
        f"Erased {erased.submissions} submission{'s' * (erased.submissions != 1)} and "
        f"{erased.partials} partial response{'s' * (erased.partials != 1)}."
    )
    if erased.more:
        notice += " More matched than one erasure takes: erase again for the rest."
    return await back_with(session, managed.viewer, PAGE, notice=notice)
