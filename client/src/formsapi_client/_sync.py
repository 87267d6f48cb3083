"""The synchronous client. Requests are built in _calls and retried by
_core.Policy; this module only sends them and pages."""

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from formsapi_client import _calls as calls
from formsapi_client._core import Call, ExportReader, configure, log_retry, read, tls
from formsapi_client._files import CHUNK, Content, Destination, FileSource, part_path
from formsapi_client.errors import ConnectionFailed, error_from_response
from formsapi_client.models import (
    Answer,
    AuditEntries,
    Changes,
    DeliveriesPage,
    Delivery,
    DeliveryDetail,
    DeliveryStatus,
    Event,
    EventsPage,
    EventType,
    File,
    FileLink,
    FormAnswerSummary,
    FormDetail,
    FormsPage,
    FormStatus,
    FormSummary,
    Funnel,
    InvitationsMade,
    InvitationsPage,
    OneResponse,
    PartialsPage,
    Recipient,
    Recovered,
    RefusalCounts,
    RespondentData,
    RespondentErased,
    SecretRotated,
    Submission,
    SubmissionDetail,
    SubmissionsPage,
    TestSent,
    TimeSeries,
    WebhookEndpoint,
    WebhookEndpointCreated,
    WebhookEndpointsPage,
)

T = TypeVar("T")


class Client:
    """The formsapi API, `/v1`. A context manager: closing it closes its
    connections. `api_key` defaults to FORMSAPI_API_KEY, `base_url` (the
    service's root) to FORMSAPI_URL, then http://127.0.0.1:8000. Retries are
    described in formsapi_client._core."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_retry_wait: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url, headers, self._policy = configure(base_url, api_key, max_retries, max_retry_wait)
        self._http = httpx.Client(
            base_url=url, headers=headers, timeout=timeout, transport=transport, verify=tls()
        )
        self.forms = Forms(self)
        self.submissions = Submissions(self)
        self.partials = Partials(self)
        self.invitations = Invitations(self)
        self.events = Events(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.files = Files(self)
        self.respondents = Respondents(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _send(self, call: Call[Any], *, stream: bool = False) -> httpx.Response:
        """The response to `call` (2xx), after the retries its policy allows;
        an ApiError or ConnectionFailed otherwise."""
        attempt = 0
        while True:
            content: bytes | Iterator[bytes] | None = call.body
            headers = call.headers
            if call.upload is not None:  # read from its start again on each attempt
                content, sent = call.upload.sync_content()
                headers = {**(headers or {}), **sent}
            request = self._http.build_request(
                call.method, call.path, params=call.params, content=content, headers=headers
            )
            try:
                response = self._http.send(request, stream=stream)
                if response.is_success:
                    return response
                if stream:
                    response.read()
                    response.close()
            except httpx.TransportError as error:
                wait = self._policy.after_error(call, error, attempt)
                if wait is None:
                    raise ConnectionFailed(f"{call.method} {request.url}: {error!r}") from error
                cause = repr(error)
            else:
                wait = self._policy.after_status(call, response, attempt)
                if wait is None:
                    raise error_from_response(response)
                cause = f"{response.status_code} {response.reason_phrase}"
            log_retry(call, cause, wait, attempt, self._policy)
            time.sleep(wait)
            attempt += 1

    def _run(self, call: Call[T]) -> T:
        response = self._send(call)
        return read(call, response)


class _Resource:
    def __init__(self, client: Client) -> None:
        self._client = client


class Forms(_Resource):
    def list(self, page: int = 1, limit: int = 50) -> FormsPage:
        """One page of the organization's forms, newest first."""
        return self._client._run(calls.forms_list(page, limit))

    def iter(self, limit: int = 100) -> Iterator[FormSummary]:
        """Every form, paging for you."""
        page = 1
        while True:
            batch = self.list(page, limit)
            yield from batch.data
            if not batch.data or page * limit >= batch.pagination.total:
                return
            page += 1

    def get(self, form_id: str, version: int | None = None, lang: str | None = None) -> FormDetail:
        """One form with its blocks and schema (an earlier `version`'s blocks
        if given; its texts in `lang`, one of its `languages`, if given)."""
        return self._client._run(calls.forms_get(form_id, version, lang))

    def summary(
        self,
        form_id: str,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        version: int | None = None,
        hidden: str | None = None,
        answer: str | None = None,
    ) -> FormAnswerSummary:
        """Answer summaries of the form's submissions (counts per option,
        distributions, means, NPS, number statistics, endings), of those
        submitted in [`since`, `until`), of one `version`, with a hidden
        field's value (`hidden="utm_source:newsletter"`) or one answer
        (`answer="plan:business"`)."""
        return self._client._run(
            calls.forms_summary(form_id, since, until, version, hidden, answer)
        )

    def timeseries(
        self,
        form_id: str,
        *,
        interval: str = "day",
        tz: str = "UTC",
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        question: str | None = None,
        version: int | None = None,
    ) -> TimeSeries:
        """Submissions per `interval` (hour, day, week from Monday, month)
        of the time zone `tz`, every bucket present; with `question`, that
        question's counts per option, or its mean, in each."""
        return self._client._run(
            calls.forms_timeseries(form_id, interval, tz, since, until, question, version)
        )

    def funnel(
        self,
        form_id: str,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        version: int | None = None,
    ) -> Funnel:
        """The funnel of the form's hosted page: views, starts, completions,
        the completion rate, the median time to complete and each page's
        drop-off, of the respondents first served in [`since`, `until`)
        (rounded out to whole UTC hours), of one `version` or all."""
        return self._client._run(calls.forms_funnel(form_id, since, until, version))

    def refusals(self, form_id: str, *, days: int | None = None) -> RefusalCounts:
        """Posts to the form's hosted page refused as spam, per UTC day and
        reason, over the last `days` days (the server's default: 30)."""
        return self._client._run(calls.forms_refusals(form_id, days))

    def create(
        self,
        title: str,
        blocks: calls.Blocks | None = None,
        slug: str | None = None,
        idempotency_key: str | None = None,
        *,
        logic: calls.Logic | None = None,
        retention_days: int | None = None,
    ) -> FormDetail:
        """A new draft form. `blocks` are block models or their JSON as dicts;
        `logic` holds its `hiddenFields`, `variables`, `logic` and `endings`;
        `retention_days`: its submissions are deleted that many days old."""
        return self._client._run(
            calls.forms_create(title, blocks, slug, idempotency_key, logic, retention_days)
        )

    def update(
        self,
        form_id: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        blocks: calls.Blocks | None = None,
        status: FormStatus | None = None,
        logic: calls.Logic | None = None,
        retention_days: int | None = None,
        limits: calls.Limits | None = None,
        one_response: OneResponse | None = None,
        password: str | None = None,
        clear: Sequence[str] = (),
    ) -> FormDetail:
        """Change what is given (None: unchanged). New blocks or logic (any of
        `hiddenFields`, `variables`, `logic`, `endings`) make a new version;
        `retention_days`, `limits` (`opensAt`, `closesAt`, `maxSubmissions`,
        its messages, `quotas`), `one_response` (who may answer the hosted
        page, how often) and `password` (asked before its first page) do not.
        `clear` names settings to take away (sent as null), by their API
        names: `embedOrigins` (back to the organization's list),
        `retentionDays`, `opensAt`, `closesAt`, `maxSubmissions`, the two
        messages, `quotas`, `oneResponse`, `password`."""
        return self._client._run(
            calls.forms_update(
                form_id,
                title,
                slug,
                blocks,
                status,
                logic,
                retention_days,
                limits,
                one_response=one_response,
                password=password,
                clear=clear,
            )
        )

    def delete(self, form_id: str, *, delete_submissions: bool = False) -> None:
        """Delete a form; one with submissions needs `delete_submissions=True`."""
        self._client._run(calls.forms_delete(form_id, delete_submissions))


class Submissions(_Resource):
    def list(
        self,
        form_id: str,
        page: int = 1,
        limit: int = 50,
        since: datetime | str | None = None,
    ) -> SubmissionsPage:
        """One page of a form's submissions, most recent first. For people and
        dashboards; a copy follows the change feed instead."""
        return self._client._run(calls.submissions_list(form_id, page, limit, since))

    def iter(
        self, form_id: str, since: datetime | str | None = None, limit: int = 100
    ) -> Iterator[Submission]:
        """Every submission (after `since`), paging for you."""
        page = 1
        while True:
            batch = self.list(form_id, page, limit, since)
            yield from batch.data
            if not batch.data or page * limit >= batch.pagination.total:
                return
            page += 1

    def get(self, form_id: str, submission_id: str) -> SubmissionDetail:
        return self._client._run(calls.submissions_get(form_id, submission_id))

    def create(
        self,
        form_id: str,
        answers: Mapping[str, Answer],
        idempotency_key: str | None = None,
        language: str | None = None,
    ) -> SubmissionDetail:
        """Submit answers to a published form; safe to retry (Idempotency-Key).
        `language`: the one of the form's the respondent answered in."""
        return self._client._run(
            calls.submissions_create(form_id, answers, idempotency_key, language)
        )

    def edit(
        self,
        form_id: str,
        submission_id: str,
        answers: Mapping[str, Answer | None],
        if_match: str | int | None = None,
        idempotency_key: str | None = None,
    ) -> SubmissionDetail:
        """Merge `answers` into the submission's (None removes one). `if_match`:
        its ETag or `version`; a newer one answers PreconditionFailed."""
        return self._client._run(
            calls.submissions_edit(form_id, submission_id, answers, if_match, idempotency_key)
        )

    def delete(self, form_id: str, submission_id: str) -> None:
        self._client._run(calls.submissions_delete(form_id, submission_id))

    def changes(self, form_id: str, after: int = 0, limit: int = 1000) -> Changes:
        """One page of the form's change feed after change number `after`."""
        return self._client._run(calls.submissions_changes(form_id, after, limit))

    def changes_json(self, form_id: str, after: int = 0, limit: int = 1000) -> Any:
        """`changes` as plain JSON (dicts, camelCase keys), for bulk copies:
        building a model per submission costs more than copying it."""
        return self._client._run(calls.submissions_changes_json(form_id, after, limit))

    def iter_changes(self, form_id: str, after: int = 0, limit: int = 1000) -> Iterator[Changes]:
        """Pages of the change feed until `has_more` is false. Apply each page,
        then store its `next`: that is where to start next time."""
        while True:
            page = self.changes(form_id, after, limit)
            yield page
            if not page.has_more:
                return
            after = page.next

    @contextmanager
    def export(self, form_id: str) -> Iterator["Export"]:
        """Every live submission, streamed: `with client.submissions.export(id)
        as rows:` then `for row in rows`. `rows.change_seq` is where the
        change feed continues."""
        response = self._client._send(calls.submissions_export(form_id), stream=True)
        try:
            yield Export(response)
        finally:
            response.close()


class Export:
    """An export being read: iterate for its rows (SubmissionDetail), line by
    line. Raises ExportIncomplete at the end if it was cut short."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._reader = ExportReader(response.headers)

    @property
    def change_seq(self) -> int:
        """The form's change number the export covers (`X-Change-Seq`)."""
        return self._reader.change_seq

    @property
    def count(self) -> int:
        """Rows read so far."""
        return self._reader.count

    def __iter__(self) -> Iterator[SubmissionDetail]:
        reader = self._reader
        try:
            for chunk in self._response.iter_bytes():
                yield from reader.feed(chunk)
        except httpx.TransportError as error:
            raise reader.cut_short(repr(error)) from error
        reader.finish()


class Invitations(_Resource):
    """Single-use links to a form's hosted page, each answered once."""

    def create(
        self,
        form_id: str,
        *,
        count: int | None = None,
        recipients: Sequence[Recipient] | None = None,
    ) -> InvitationsMade:
        """`count` links, or one for each of `recipients` (an email and a
        label that go into the form's hidden fields `email` and `label`);
        their tokens and URLs are in this answer only."""
        return self._client._run(calls.invitations_create(form_id, count, recipients))

    def list(self, form_id: str, page: int = 1, limit: int = 50) -> InvitationsPage:
        """One page of the form's links, newest first (never their tokens)."""
        return self._client._run(calls.invitations_list(form_id, page, limit))

    def revoke(self, form_id: str, invitation_id: str) -> None:
        """Revoke a link: it opens the form no more."""
        self._client._run(calls.invitations_revoke(form_id, invitation_id))


class Partials(_Resource):
    """Respondents on their way through a form with pages (drop-off)."""

    def list(self, form_id: str, page: int = 1, limit: int = 50) -> PartialsPage:
        """One page of the form's partial responses, most recently active first."""
        return self._client._run(calls.partials_list(form_id, page, limit))

    def delete(self, form_id: str, partial_id: str) -> None:
        """Erase one: its answers go, and its resume link stops working."""
        self._client._run(calls.partials_delete(form_id, partial_id))


class Respondents(_Resource):
    """One respondent's data across the organization's forms, found by the
    answer to any email question (`email`, ASCII letters compared
    case-insensitively) or by a hidden field's exact value (`field` and
    `value`). Each call leaves an audit entry: who, when, how many."""

    def export(
        self, email: str | None = None, *, field: str | None = None, value: str | None = None
    ) -> RespondentData:
        """Their submissions and unfinished partial responses (submissions:read)."""
        return self._client._run(calls.respondents_export(email, field, value))

    def erase(
        self, email: str | None = None, *, field: str | None = None, value: str | None = None
    ) -> RespondentErased:
        """Delete them all, each submission as its own delete does (submissions:write)."""
        return self._client._run(calls.respondents_erase(email, field, value))

    def audit_entries(self) -> AuditEntries:
        """Who exported or erased a respondent's data and when, newest first."""
        return self._client._run(calls.respondents_audit_entries())


class Events(_Resource):
    def list(
        self,
        after: str | None = None,
        types: Sequence[EventType | str] | None = None,
        form_id: str | None = None,
        limit: int = 100,
    ) -> EventsPage:
        """The organization's events after `after` (an event id), oldest first."""
        return self._client._run(calls.events_list(after, types, form_id, limit))

    def iter(
        self,
        after: str | None = None,
        types: Sequence[EventType | str] | None = None,
        form_id: str | None = None,
        limit: int = 1000,
    ) -> Iterator[Event]:
        """Every event after `after` until none is left; an event's id is the
        `after` to resume from."""
        while True:
            page = self.list(after, types, form_id, limit)
            yield from page.data
            if not page.has_more or page.next is None:
                return
            after = page.next


class WebhookEndpoints(_Resource):
    def create(
        self,
        url: str,
        *,
        description: str | None = None,
        event_types: Sequence[EventType] | None = None,
        form_ids: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> WebhookEndpointCreated:
        """Register an endpoint; its signing `secret` is in the answer, this once."""
        return self._client._run(
            calls.endpoints_create(url, description, event_types, form_ids, enabled)
        )

    def list(self) -> WebhookEndpointsPage:
        return self._client._run(calls.endpoints_list())

    def get(self, endpoint_id: str) -> WebhookEndpoint:
        return self._client._run(calls.endpoints_get(endpoint_id))

    def update(
        self,
        endpoint_id: str,
        *,
        url: str | None = None,
        description: str | None = None,
        event_types: Sequence[EventType] | None = None,
        form_ids: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> WebhookEndpoint:
        return self._client._run(
            calls.endpoints_update(endpoint_id, url, description, event_types, form_ids, enabled)
        )

    def delete(self, endpoint_id: str) -> None:
        self._client._run(calls.endpoints_delete(endpoint_id))

    def rotate_secret(self, endpoint_id: str) -> SecretRotated:
        return self._client._run(calls.endpoints_rotate_secret(endpoint_id))

    def test(self, endpoint_id: str) -> TestSent:
        """Send the endpoint a `ping` event now."""
        return self._client._run(calls.endpoints_test(endpoint_id))

    def deliveries(
        self,
        endpoint_id: str,
        page: int = 1,
        limit: int = 50,
        status: DeliveryStatus | None = None,
    ) -> DeliveriesPage:
        return self._client._run(calls.endpoints_deliveries(endpoint_id, page, limit, status))

    def delivery(self, endpoint_id: str, delivery_id: str) -> DeliveryDetail:
        return self._client._run(calls.endpoints_delivery(endpoint_id, delivery_id))

    def resend(self, endpoint_id: str, delivery_id: str) -> Delivery:
        return self._client._run(calls.endpoints_resend(endpoint_id, delivery_id))

    def recover(self, endpoint_id: str, since: datetime) -> Recovered:
        """Send again what failed since `since`, and what never went."""
        return self._client._run(calls.endpoints_recover(endpoint_id, since))


class Files(_Resource):
    """Files uploaded to file questions: upload one, then name its `id` in
    the question's answer (several: ids joined by commas)."""

    def upload(
        self, form_id: str, question: str, source: FileSource, name: str | None = None
    ) -> File:
        """Upload a file for the file question `question` (its key) of a
        published form. `source`: bytes, a path, or a binary file object
        (sent from where it stands); a path or file object is streamed a
        chunk at a time. `name` defaults to the path's or file object's.
        Uploads are not deduplicated: one that may have reached the service
        is not sent again (ConnectionFailed); one no submission names is
        purged after a day."""
        return self._client._run(calls.files_upload(form_id, question, source, name))

    def get(self, file_id: str) -> File:
        """A file's name, type, size and SHA-256, and the submission naming it."""
        return self._client._run(calls.files_get(file_id))

    @contextmanager
    def stream(self, file_id: str) -> Iterator["FileContent"]:
        """A file's bytes as they arrive: `with client.files.stream(id) as
        content:` then `for chunk in content`."""
        response = self._client._send(calls.files_download(file_id), stream=True)
        try:
            yield FileContent(response)
        finally:
            response.close()

    def download(self, file_id: str, to: Destination) -> None:
        """Write a file's bytes to `to`, a path or a binary file object, a
        chunk at a time, checked against its SHA-256. A path is written whole
        or not at all (through a temporary file beside it)."""
        with self.stream(file_id) as content:
            if not isinstance(to, str | os.PathLike):
                for chunk in content:
                    to.write(chunk)
                return
            target = Path(to)
            part = part_path(target)
            try:
                with part.open("xb") as file:
                    for chunk in content:
                        file.write(chunk)
                part.replace(target)
            finally:
                part.unlink(missing_ok=True)

    def link(self, file_id: str, expires_in: int | timedelta | None = None) -> FileLink:
        """A link that downloads the file without a key until it expires
        (`expires_in`: seconds, 60 up to 7 days; an hour if None). It cannot
        be revoked; deleting the file's submission ends it."""
        return self._client._run(calls.files_link(file_id, expires_in))


class FileContent(Content):
    """A file being downloaded: iterate for its bytes, a chunk at a time.
    At the end they are checked against its SHA-256 (UnreadableResponse if
    they differ); a connection that breaks raises ConnectionFailed."""

    def __iter__(self) -> Iterator[bytes]:
        received = self._received
        try:
            for chunk in self._response.iter_bytes(CHUNK):
                yield received.feed(chunk)
        except httpx.TransportError as error:
            raise ConnectionFailed(f"GET {self._response.url}: {error!r}") from error
        received.finish()
