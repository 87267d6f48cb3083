"""One builder per endpoint: its arguments in, the Call both clients send out.
Readers are built once, here, at import."""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from formsapi_client._core import Call, call, from_model, nothing
from formsapi_client._files import FileSource, Upload
from formsapi_client.models import (
    Answer,
    AuditEntries,
    Block,
    BlockList,
    Changes,
    DeliveriesPage,
    Delivery,
    DeliveryDetail,
    DeliveryStatus,
    EventsPage,
    EventType,
    File,
    FileLink,
    FileLinkCreate,
    FormAnswerSummary,
    FormCreate,
    FormDetail,
    FormsPage,
    FormStatus,
    FormUpdate,
    Funnel,
    InvitationCreate,
    InvitationsMade,
    InvitationsPage,
    OneResponse,
    PartialsPage,
    Recipient,
    Recover,
    Recovered,
    RefusalCounts,
    RespondentData,
    RespondentErased,
    RespondentQuery,
    SecretRotated,
    SubmissionCreate,
    SubmissionDetail,
    SubmissionPatch,
    SubmissionsPage,
    TestSent,
    TimeSeries,
    WebhookEndpoint,
    WebhookEndpointCreate,
    WebhookEndpointCreated,
    WebhookEndpointsPage,
    WebhookEndpointUpdate,
)

Blocks = Sequence[Block | Mapping[str, Any]]
# A form's logic beside its blocks, in the API's shape: hiddenFields,
# variables, logic and endings, each a list of models or their JSON.
Logic = Mapping[str, Sequence[Any]]


def _logic(logic: Logic | None) -> dict[str, Any]:
    return dict(logic or {})


# When a form opens and closes, how many submissions it takes, its messages
# and quotas, by their API names: opensAt, closesAt, maxSubmissions,
# messageBeforeOpening, messageAfterClosing, quotas (None values are not sent).
Limits = Mapping[str, Any]


_forms_page = from_model(FormsPage)
_form = from_model(FormDetail)
_summary = from_model(FormAnswerSummary)
_series = from_model(TimeSeries)
_funnel = from_model(Funnel)

_refusals = from_model(RefusalCounts)
_respondent = from_model(RespondentData)
_erased = from_model(RespondentErased)
_audit = from_model(AuditEntries)
_submissions_page = from_model(SubmissionsPage)
_partials_page = from_model(PartialsPage)
_invitations_made = from_model(InvitationsMade)
_invitations_page = from_model(InvitationsPage)
_submission = from_model(SubmissionDetail)
_changes = from_model(Changes)
try:  # twice as fast as the standard library's on a feed page, when it is there
    from orjson import loads as json_loads
except ImportError:  # pragma: no cover - orjson comes with the sync extra
    from json import loads as json_loads  # type: ignore[assignment]
_events = from_model(EventsPage)
_endpoint = from_model(WebhookEndpoint)
_endpoint_created = from_model(WebhookEndpointCreated)
_endpoints = from_model(WebhookEndpointsPage)
_rotated = from_model(SecretRotated)
_test_sent = from_model(TestSent)
_deliveries = from_model(DeliveriesPage)
_delivery = from_model(Delivery)
_delivery_detail = from_model(DeliveryDetail)
_recovered = from_model(Recovered)
_file = from_model(File)
_file_link = from_model(FileLink)


def _blocks(blocks: Blocks | None) -> list[Block] | None:
    return None if blocks is None else BlockList.validate_python(list(blocks))


def _given(**fields: Any) -> dict[str, Any]:
    """The fields passed: those left None are not sent (and do not change)."""
    return {name: value for name, value in fields.items() if value is not None}


def _moment(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


# Forms


def forms_list(page: int, limit: int) -> Call[FormsPage]:
    return call("forms.list", _forms_page, params={"page": page, "limit": limit})


def forms_get(form_id: str, version: int | None, lang: str | None = None) -> Call[FormDetail]:
    params = {"version": version, "lang": lang}
    return call("forms.get", _form, ids={"formId": form_id}, params=params)


def forms_summary(
    form_id: str,
    since: datetime | str | None,
    until: datetime | str | None,
    version: int | None,
    hidden: str | None,
    answer: str | None,
) -> Call[FormAnswerSummary]:
    params = {
        "since": _moment(since),
        "until": _moment(until),
        "version": version,
        "hidden": hidden,
        "answer": answer,
    }
    return call("forms.summary", _summary, ids={"formId": form_id}, params=params)


def forms_timeseries(
    form_id: str,
    interval: str,
    tz: str,
    since: datetime | str | None,
    until: datetime | str | None,
    question: str | None,
    version: int | None,
) -> Call[TimeSeries]:
    params = {
        "interval": interval,
        "tz": tz,
        "since": _moment(since),
        "until": _moment(until),
        "question": question,
        "version": version,
    }
    return call("forms.timeseries", _series, ids={"formId": form_id}, params=params)


def forms_funnel(
    form_id: str,
    since: datetime | str | None,
    until: datetime | str | None,
    version: int | None,
) -> Call[Funnel]:
    params = {"since": _moment(since), "until": _moment(until), "version": version}
    return call("forms.funnel", _funnel, ids={"formId": form_id}, params=params)


def forms_refusals(form_id: str, days: int | None) -> Call[RefusalCounts]:
    params = {"days": days}
    return call("forms.refusals", _refusals, ids={"formId": form_id}, params=params)


def forms_create(
    title: str,
    blocks: Blocks | None,
    slug: str | None,
    idempotency_key: str | None,
    logic: Logic | None = None,
    retention_days: int | None = None,
) -> Call[FormDetail]:
    given = _given(title=title, slug=slug, blocks=_blocks(blocks), retention_days=retention_days)
    body = FormCreate(**given, **_logic(logic))
    return call("forms.create", _form, body=body, idempotency_key=idempotency_key)


# A form's settings `forms.update(clear=[...])` may send as null: back to
# its organization's framing list, kept until deleted, no schedule, limit,
# message or quota, no one-response rule, no password.
CLEARABLE = frozenset(
    {
        "embedOrigins",
        "retentionDays",
        "opensAt",
        "closesAt",
        "maxSubmissions",
        "messageBeforeOpening",
        "messageAfterClosing",
        "quotas",
        "oneResponse",
        "password",
    }
)


def _cleared(clear: Sequence[str], sent: Mapping[str, Any]) -> list[str]:
    unknown = sorted(set(clear) - CLEARABLE)
    if unknown:
        raise ValueError(f"cannot clear {unknown}: only {sorted(CLEARABLE)}")
    both = sorted(set(clear) & set(sent))
    if both:
        raise ValueError(f"{both} both given and cleared")
    return list(clear)


def forms_update(
    form_id: str,
    title: str | None,
    slug: str | None,
    blocks: Blocks | None,
    status: FormStatus | None,
    logic: Logic | None = None,
    retention_days: int | None = None,
    limits: Limits | None = None,
    one_response: OneResponse | None = None,
    password: str | None = None,
    clear: Sequence[str] = (),
) -> Call[FormDetail]:
    given = _given(
        title=title,
        slug=slug,
        blocks=_blocks(blocks),
        status=status,
        retention_days=retention_days,
        one_response=one_response,
        password=password,
    )
    body = FormUpdate(**given, **_logic(logic), **dict(limits or {}))
    sent = body.model_dump(by_alias=True, exclude_none=True)
    nulls = _cleared(clear, sent)
    return call("forms.update", _form, ids={"formId": form_id}, body=body, nulls=nulls)


def forms_delete(form_id: str, delete_submissions: bool) -> Call[None]:
    params = {"deleteSubmissions": "true" if delete_submissions else None}
    return call("forms.delete", nothing, ids={"formId": form_id}, params=params)


# Submissions


def submissions_list(
    form_id: str, page: int, limit: int, since: datetime | str | None
) -> Call[SubmissionsPage]:
    params = {"page": page, "limit": limit, "since": _moment(since)}
    return call("submissions.list", _submissions_page, ids={"formId": form_id}, params=params)


def submissions_get(form_id: str, submission_id: str) -> Call[SubmissionDetail]:
    ids = {"formId": form_id, "submissionId": submission_id}
    return call("submissions.get", _submission, ids=ids)


def submissions_create(
    form_id: str,
    answers: Mapping[str, Answer],
    idempotency_key: str | None,
    language: str | None = None,
) -> Call[SubmissionDetail]:
    body = SubmissionCreate(answers=dict(answers), language=language)
    return call(
        "submissions.create",
        _submission,
        ids={"formId": form_id},
        body=body,
        idempotency_key=idempotency_key,
    )


def submissions_edit(
    form_id: str,
    submission_id: str,
    answers: Mapping[str, Answer | None],
    if_match: str | int | None,
    idempotency_key: str | None,
) -> Call[SubmissionDetail]:
    headers = None
    if if_match is not None:
        # A version number is the ETag unquoted.
        headers = {"If-Match": f'"{if_match}"' if isinstance(if_match, int) else if_match}
    return call(
        "submissions.edit",
        _submission,
        ids={"formId": form_id, "submissionId": submission_id},
        body=SubmissionPatch(answers=dict(answers)),
        idempotency_key=idempotency_key,
        headers=headers,
    )


def submissions_delete(form_id: str, submission_id: str) -> Call[None]:
    ids = {"formId": form_id, "submissionId": submission_id}
    return call("submissions.delete", nothing, ids=ids)


def submissions_changes(form_id: str, after: int, limit: int) -> Call[Changes]:
    params = {"after": after, "limit": limit}
    return call("submissions.changes", _changes, ids={"formId": form_id}, params=params)


def submissions_changes_json(form_id: str, after: int, limit: int) -> Call[Any]:
    params = {"after": after, "limit": limit}
    return call("submissions.changes", json_loads, ids={"formId": form_id}, params=params)


def submissions_export(form_id: str) -> Call[None]:
    # Streamed: the clients read the body themselves (ExportReader).
    return call("submissions.export", nothing, ids={"formId": form_id})


# Partial responses


def partials_list(form_id: str, page: int, limit: int) -> Call[PartialsPage]:
    params = {"page": page, "limit": limit}
    return call("partials.list", _partials_page, ids={"formId": form_id}, params=params)


def partials_delete(form_id: str, partial_id: str) -> Call[None]:
    return call("partials.delete", nothing, ids={"formId": form_id, "partialId": partial_id})


# Invitations


def invitations_create(
    form_id: str, count: int | None, recipients: Sequence[Recipient] | None
) -> Call[InvitationsMade]:
    body = InvitationCreate(
        **_given(count=count, recipients=list(recipients) if recipients is not None else None)
    )
    return call("invitations.create", _invitations_made, ids={"formId": form_id}, body=body)


def invitations_list(form_id: str, page: int, limit: int) -> Call[InvitationsPage]:
    params = {"page": page, "limit": limit}
    return call("invitations.list", _invitations_page, ids={"formId": form_id}, params=params)


def invitations_revoke(form_id: str, invitation_id: str) -> Call[None]:
    ids = {"formId": form_id, "invitationId": invitation_id}
    return call("invitations.revoke", nothing, ids=ids)


# Respondents


def _person(email: str | None, field: str | None, value: str | None) -> RespondentQuery:
    return RespondentQuery(**_given(email=email, field=field, value=value))


def respondents_export(
    email: str | None, field: str | None, value: str | None
) -> Call[RespondentData]:
    return call("respondents.export", _respondent, body=_person(email, field, value))


def respondents_erase(
    email: str | None, field: str | None, value: str | None
) -> Call[RespondentErased]:
    return call("respondents.erase", _erased, body=_person(email, field, value))


def respondents_audit_entries() -> Call[AuditEntries]:
    return call("respondents.audit_entries", _audit)


# Events


def events_list(
    after: str | None,
    types: Sequence[EventType | str] | None,
    form_id: str | None,
    limit: int,
) -> Call[EventsPage]:
    params = {
        "after": after,
        "types": ",".join(types) if types else None,
        "formId": form_id,
        "limit": limit,
    }
    return call("events.list", _events, params=params)


# Webhook endpoints


def endpoints_create(
    url: str,
    description: str | None,
    event_types: Sequence[EventType] | None,
    form_ids: Sequence[str] | None,
    enabled: bool | None,
) -> Call[WebhookEndpointCreated]:
    body = WebhookEndpointCreate(
        **_given(
            url=url,
            description=description,
            event_types=None if event_types is None else list(event_types),
            form_ids=None if form_ids is None else list(form_ids),
            enabled=enabled,
        )
    )
    return call("webhook_endpoints.create", _endpoint_created, body=body)


def endpoints_list() -> Call[WebhookEndpointsPage]:
    return call("webhook_endpoints.list", _endpoints)


def endpoints_get(endpoint_id: str) -> Call[WebhookEndpoint]:
    return call("webhook_endpoints.get", _endpoint, ids={"endpointId": endpoint_id})


def endpoints_update(
    endpoint_id: str,
    url: str | None,
    description: str | None,
    event_types: Sequence[EventType] | None,
    form_ids: Sequence[str] | None,
    enabled: bool | None,
) -> Call[WebhookEndpoint]:
    body = WebhookEndpointUpdate(
        **_given(
            url=url,
            description=description,
            event_types=None if event_types is None else list(event_types),
            form_ids=None if form_ids is None else list(form_ids),
            enabled=enabled,
        )
    )
    return call("webhook_endpoints.update", _endpoint, ids={"endpointId": endpoint_id}, body=body)


def endpoints_delete(endpoint_id: str) -> Call[None]:
    return call("webhook_endpoints.delete", nothing, ids={"endpointId": endpoint_id})


def endpoints_rotate_secret(endpoint_id: str) -> Call[SecretRotated]:
    return call("webhook_endpoints.rotate_secret", _rotated, ids={"endpointId": endpoint_id})


def endpoints_test(endpoint_id: str) -> Call[TestSent]:
    return call("webhook_endpoints.test", _test_sent, ids={"endpointId": endpoint_id})


def endpoints_deliveries(
    endpoint_id: str, page: int, limit: int, status: DeliveryStatus | None
) -> Call[DeliveriesPage]:
    params = {"page": page, "limit": limit, "status": status}
    return call(
        "webhook_endpoints.deliveries", _deliveries, ids={"endpointId": endpoint_id}, params=params
    )


def endpoints_delivery(endpoint_id: str, delivery_id: str) -> Call[DeliveryDetail]:
    ids = {"endpointId": endpoint_id, "deliveryId": delivery_id}
    return call("webhook_endpoints.delivery", _delivery_detail, ids=ids)


def endpoints_resend(endpoint_id: str, delivery_id: str) -> Call[Delivery]:
    ids = {"endpointId": endpoint_id, "deliveryId": delivery_id}
    return call("webhook_endpoints.resend", _delivery, ids=ids)


def endpoints_recover(endpoint_id: str, since: datetime) -> Call[Recovered]:
    return call(
        "webhook_endpoints.recover",
        _recovered,
        ids={"endpointId": endpoint_id},
        body=Recover(since=since),
    )


# Files


def files_upload(form_id: str, question: str, source: FileSource, name: str | None) -> Call[File]:
    upload = Upload(source, name)
    params = {"question": question, "name": upload.name}
    return call("files.upload", _file, ids={"formId": form_id}, params=params, upload=upload)


def files_get(file_id: str) -> Call[File]:
    return call("files.get", _file, ids={"fileId": file_id})


def files_download(file_id: str) -> Call[None]:
    # Streamed: the clients read the body themselves (Received).
    return call("files.download", nothing, ids={"fileId": file_id})


def files_link(file_id: str, expires_in: int | timedelta | None) -> Call[FileLink]:
    if isinstance(expires_in, timedelta):
        expires_in = int(expires_in.total_seconds())
    body = FileLinkCreate(expires_in=expires_in)
    return call("files.link", _file_link, ids={"fileId": file_id}, body=body)
