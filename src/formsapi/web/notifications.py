"""A form's notifications page: which members are mailed about its
submissions (each one, or a daily digest) and whether respondents get a copy
of their answers. Editors, admins and owners set them; without a mail
server (FORMSAPI_SMTP_URL) the page says nothing is sent."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from formsapi.errors import BadRequest, FormsAPIError
from formsapi.form import service as form_service
from formsapi.kit.mail import Mailer
from formsapi.kit.time import utcnow
from formsapi.member.service import can_edit_forms
from formsapi.models import Frequency
from formsapi.notification import service
from formsapi.services import services
from formsapi.web.context import DbDep, PathId, ReadDep, back_with, render
from formsapi.web.pages import Managed, PageRoute, Section

PAGE = "/forms"
MAX_FIELDS = 10_000  # a posted form's fields: members, the copy, the token


def _back(request: Request, _: FormsAPIError) -> str:
    return request.url.path  # the notifications page it was posted from


SECTION = Section(
    "forms",
    "Notifications",
    PAGE,
    back=_back,
    may_open=can_edit_forms,
    closed="Your role in {organization} reads forms; editors, admins and owners set who is told.",
)
OrganizationDep = Annotated[Managed, Depends(SECTION.organization)]

router = APIRouter(prefix=PAGE, route_class=PageRoute, include_in_schema=False)


@router.get("/{form_id}/notifications")
async def notifications_page(
    request: Request, session: ReadDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    organization_id = managed.organization.id
    form = await form_service.get(session, organization_id, form_id)
    current = await service.settings(session, organization_id, form.id)
    mailer: Mailer = services(request).mailer
    return render(
        request,
        "notifications/notifications.html",
        managed.viewer,
        section=SECTION.name,
        form=form,
        settings=current,
        mail=mailer.enabled,
        keyed=services(request).secret_box is not None,
        caps=services(request).settings,
    )


@router.post("/{form_id}/notifications")
async def change_notifications(
    request: Request, session: DbDep, managed: OrganizationDep, form_id: PathId
) -> Response:
    """Each member's choice (`member-{user id}`: each, daily or none) and the
    email question a respondent's copy goes to (`copy`, empty for none)."""
    posted = await request.form(max_fields=MAX_FIELDS)
    chosen: dict[str, str] = {}
    for name, value in posted.multi_items():
        if name.startswith("member-") and isinstance(value, str) and value:
            if value not in {f.value for f in Frequency}:
                raise BadRequest("Choose each submission, a daily digest or nothing.")
            chosen[name.removeprefix("member-")] = value
    copy = posted.get("copy")
    copy_question = copy if isinstance(copy, str) and copy else None
    organization_id = managed.organization.id
    form = await form_service.get(session, organization_id, form_id)
    keyed = services(request).secret_box is not None
    await service.update(
        session, organization_id, form.id, chosen, copy_question, utcnow(), keyed=keyed
    )
    told = len(chosen)
    notice = f"Saved: {told} member{'s' * (told != 1)} told" + (
        ", and respondents get a copy." if copy_question else "."
    )
    path = f"{PAGE}/{form.id}/notifications"
    return await back_with(session, managed.viewer, path, notice=notice)
