"""How every page of the settings area answers what it cannot do, in one
place: the organization a page manages, and what a domain error becomes.

A page calls services and lets their errors (formsapi.errors) escape. Every
route of the area is a PageRoute, which carries such an error past the page's
transaction (rolled back: a refused action changes nothing) to `answer`:

- a form posted by someone signed in and let into the page's section goes
  back to the page it came from, which shows the error once (post/redirect/
  get: a reload sends nothing again), and whatever the form keeps;
- anything else is a page saying so, with the error's status: 404 in the same
  words whether the thing never existed or is another organization's, 403
  for a section the person's role does not open.

Forms shown before sign-in (sign-in, password reset, invitations) have no
session to carry a message across a redirect: they show the form again with
what was wrong, and let a link that opens nothing be answered here.
"""

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from formsapi.errors import Forbidden, FormNotFound, FormsAPIError, NotFound
from formsapi.member.service import InvitationNotValid, MemberNotFound
from formsapi.models import Organization
from formsapi.user.service import ResetNotValid
from formsapi.web.context import (
    BadCSRF,
    SignInRequired,
    Viewer,
    ViewerDep,
    render,
    see_other,
    sign_in_path,
    write_scope,
)
from formsapi.web_session import service as web_session_service
from formsapi.webhook.service import DeliveryNotFound, EndpointNotFound


class KeyNotFound(NotFound):
    """No such API key in this organization, or none this person may revoke.
    (The key service's own refusal is a plain NotFound with these words.)"""

    def __init__(self) -> None:
        super().__init__("No such API key in this organization.")


# The page for something a page's path names that is not there: the same
# words whether it never existed or is another organization's (the error's
# own detail may quote the id, and would tell them apart). None: the error's.
MISSING: dict[type[NotFound], tuple[str, str | None]] = {
    FormNotFound: ("Form not found", "There is no such form in this organization."),
    KeyNotFound: ("Key not found", "There is no such API key in this organization."),
    MemberNotFound: ("Member not found", "There is no such member in this organization."),
    EndpointNotFound: (
        "Endpoint not found",
        "There is no such webhook endpoint in this organization.",
    ),
    DeliveryNotFound: (
        "Delivery not found",
        "There is no such delivery for this endpoint (deliveries are kept 30 days).",
    ),
    InvitationNotValid: ("Invitation", None),
    ResetNotValid: ("Password reset", None),
}

Back = Callable[[Request, FormsAPIError], str]


@dataclass(frozen=True, slots=True)
class Managed:
    """The organization a page manages, and the signed-in member's role in it."""

    viewer: Viewer
    organization: Organization
    role: str


@dataclass(frozen=True, eq=False)
class Section:
    """A part of the settings area: its name in the top bar, the heading of
    its refusals, the page its refused forms go back to (or `back`, which
    picks one), and which roles open it at all."""

    name: str
    title: str
    page: str
    back: Back | None = None
    may_open: Callable[[str], bool] | None = None
    closed: str = ""  # why a role that may not open it cannot; {organization} is its name
    fields: Mapping[str, str] = field(default_factory=dict)  # a problem's pointer -> label

    async def signed_in(self, request: Request, viewer: ViewerDep) -> Viewer:
        """Dependency of a page of the section that needs no organization."""
        request.state.visit = Visit(self, let_in=True)
        return viewer

    async def organization(self, request: Request, viewer: ViewerDep) -> Managed:
        """Dependency of a page that manages an organization: the signed-in
        person's active one, always one they are a member of (the viewer's
        organizations are their memberships, read on this request)."""
        visit = request.state.visit = Visit(self)
        if viewer.organization is None or viewer.role is None:
            raise NoOrganization(self)
        if self.may_open is not None and not self.may_open(viewer.role):
            # Raised before the visit is let in: not an action refused but the
            # whole section, answered as a page whatever the method.
            raise Forbidden(self.closed.format(organization=viewer.organization.name))
        visit.let_in = True
        return Managed(viewer, viewer.organization, viewer.role)


@dataclass(slots=True)
class Visit:
    """What `answer` knows of the page a request is for."""

    section: Section
    let_in: bool = False
    kept: dict[str, Any] = field(default_factory=dict)


def keep(request: Request, **fields: Any) -> None:
    """What the page's form shows again if the action is refused (the
    redirect would drop it); kept in the session's one-time message."""
    visit: Visit | None = getattr(request.state, "visit", None)
    if visit is not None:
        visit.kept.update(fields)


class Refused(Exception):
    """A domain error out of a page, on its way to `answer`."""

    def __init__(self, error: FormsAPIError) -> None:
        self.error = error


class NoOrganization(Exception):
    """An organization's page, asked by someone in none now."""

    def __init__(self, section: Section) -> None:
        self.section = section


class PageRoute(APIRoute):
    """A route of the settings area: a domain error its page lets escape is
    answered as a page (`answer`), not as the API's problem document."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handle(request)
            except FormsAPIError as error:
                # Raised on, not answered here: the page's transaction is
                # still open here, and rolls back as this passes it.
                raise Refused(error) from error

        return page


def explained(error: FormsAPIError, fields: Mapping[str, str]) -> str:
    """The service's message, and what it found wrong with each field."""
    parts = []
    for problem in error.extensions.get("errors") or []:
        name = str(problem.get("pointer", "")).removeprefix("/").split("/")[0]
        label = fields.get(name)
        parts.append(f"{label}: {problem['detail']}" if label else str(problem["detail"]))
    return " ".join([error.detail, *[f"{part}." for part in parts]])


def _words(error: FormsAPIError, section: Section | None) -> tuple[str, str]:
    for kind in type(error).__mro__:
        if kind in MISSING:
            heading, message = MISSING[kind]
            return heading, message or error.detail
    return (section.title if section else error.title), error.detail


async def answer(request: Request, error: FormsAPIError) -> Response:
    """The one answer of the settings area to a domain error (see the module's
    docstring)."""
    viewer: Viewer | None = getattr(request.state, "viewer", None)
    visit: Visit | None = getattr(request.state, "visit", None)
    section = visit.section if visit else None
    if request.method == "POST" and viewer is not None and visit is not None and visit.let_in:
        message = {"error": explained(error, visit.section.fields), **visit.kept}
        async with write_scope(request) as session:
            await web_session_service.put_flash(session, viewer.signed_in, message)
        back = visit.section.back
        return see_other(back(request, error) if back else visit.section.page)
    heading, text = _words(error, section)
    response = render(
        request,
        "pages/message.html",
        viewer,
        error.status,
        heading=heading,
        message=text,
        section=section.name if section else None,
    )
    response.headers.update(error.headers)
    return response


def install(app: FastAPI) -> None:
    """The settings area's answers to what its pages raise (per app: the
    routes are shared by every app of the process, their handlers are not)."""

    @app.exception_handler(Refused)
    async def _refused(request: Request, refused: Refused) -> Response:
        return await answer(request, refused.error)

    @app.exception_handler(NoOrganization)
    async def _no_organization(request: Request, missing: NoOrganization) -> Response:
        if request.method == "POST":
            return see_other(missing.section.page)  # which says so
        viewer: Viewer = request.state.viewer
        return render(request, "pages/no_organization.html", viewer, section=missing.section.name)

    @app.exception_handler(SignInRequired)
    async def _sign_in(_: Request, error: SignInRequired) -> Response:
        return see_other(sign_in_path(error.next_path))

    @app.exception_handler(BadCSRF)
    async def _bad_csrf(request: Request, _: BadCSRF) -> Response:
        return render(
            request,
            "pages/message.html",
            None,
            403,
            heading="This page had expired",
            message="For your safety the form was not sent. "
            "Go back, reload the page and try again.",
        )
