from fastapi import APIRouter
from fastapi.responses import Response

from formsapi.api_key import service as key_service
from formsapi.api_key.principal import Principal
from formsapi.api_key.scopes import Scope
from formsapi.dependencies import GuardedRoute, PrincipalDep, ReadSessionDep, SessionDep, requires
from formsapi.errors import problem_responses
from formsapi.respondent import audit as audit_service
from formsapi.respondent import service
from formsapi.respondent.audit import Actor
from formsapi.respondent.schemas import (
    AuditEntries,
    RespondentData,
    RespondentErased,
    RespondentQuery,
)
from formsapi.routing import ERRORS, json

router = APIRouter(prefix="/v1", tags=["Respondents"], route_class=GuardedRoute)

BODY_ERRORS = problem_responses(400, 401, 403, 408, 413, 415, 422, 429)


async def _actor(session: SessionDep, principal: Principal) -> Actor:
    name = await key_service.name_of(session, principal.organization_id, principal.key_id)
    return Actor("key", principal.key_id, name)


@router.post(
    "/respondents/export",
    response_model=RespondentData,
    responses=BODY_ERRORS,
    openapi_extra=requires(Scope.submissions_read),
)
async def export_respondent(
    principal: PrincipalDep, session: SessionDep, query: RespondentQuery
) -> Response:
    """Everything kept of one respondent's answers (access by person): every
    submission in the organization whose answer to an email question, or to
    the hidden field `field`, equals the value, and their unfinished partial
    responses, as a JSON file to download. Each call leaves an audit entry
    (who, when, how many; never the value). Another organization's data is
    never searched."""
    who = service.person(query.email, query.field, query.value)
    actor = await _actor(session, principal)
    found = await service.export(session, principal.organization_id, who, actor)
    response = json(found)
    response.headers["Content-Disposition"] = 'attachment; filename="respondent-data.json"'
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post(
    "/respondents/erase",
    response_model=RespondentErased,
    responses=BODY_ERRORS,
    openapi_extra=requires(Scope.submissions_write),
)
async def erase_respondent(
    principal: PrincipalDep, session: SessionDep, query: RespondentQuery
) -> Response:
    """Erase one respondent (erasure by person): the submissions and partial
    responses `POST /v1/respondents/export` finds with the same query are deleted in
    one transaction, each submission as its own DELETE does (a tombstone in
    its form's change feed, a submission.deleted event, its answers taken out
    of earlier events and webhook resends, its files deleted), with an audit
    entry (who, when, how many; never the value). Says how many went."""
    who = service.person(query.email, query.field, query.value)
    actor = await _actor(session, principal)
    erased = await service.erase(session, principal.organization_id, who, actor)
    return json(
        {"submissions": erased.submissions, "partials": erased.partials, "more": erased.more}
    )


@router.get(
    "/audit-entries",
    response_model=AuditEntries,
    responses=ERRORS,
    openapi_extra=requires(Scope.submissions_read),
)
async def list_audit_entries(principal: PrincipalDep, session: ReadSessionDep) -> Response:
    """Who exported or erased a respondent's data and when, newest first
    (the last 200): never what was searched for nor any answer."""
    return json({"data": await audit_service.recent(session, principal.organization_id)})
