"""What the sync and async clients share: the table of endpoints, a call
described once (path, query, body, headers, whether it may be repeated, how
its answer is read), the retry policy, and the export's line reader. The two
clients only send.

Retries (`Policy`), by what a repeat could do:

- A read (GET) is repeated after any connection failure, 429, 502, 503 and 504.
- A write the service deduplicates (POST /forms, POST .../submissions and
  PATCH .../submissions/{id}, which honour `Idempotency-Key`) carries a key,
  generated (uuid4) unless given, the same on every attempt; it is repeated
  like a read: a repeat that reaches the service after the first one returns
  the first one's answer and changes nothing.
- A signed link to a file (POST /files/{id}/links) is only computed, never
  stored: it is repeated like a read.
- Any other write (PATCH and DELETE of forms, submissions' DELETE, a file's
  upload, and every webhook endpoint POST, PATCH or DELETE, which take no
  key) is repeated only
  when the service provably did not act on it: the connection was never made
  (connect error or timeout, no pooled connection free), 429 (the limit is
  checked before anything is read), or 503 carrying `Retry-After`, which the
  service sends only when nothing was done (every connection busy, or a
  database unreachable before the write began). A connection that breaks
  after the request was sent, a 502, a 504 or a 503 without `Retry-After`
  raise at once: the write may have been applied, so read before trying again.
  An upload from a file object that cannot seek is not repeated once a byte
  of it was read: its bytes are gone.

Each wait is the response's `Retry-After` when it has one (a `Retry-After`
above `max_retry_wait` is not waited for: the error is raised, carrying it),
else a full-jitter exponential backoff: a random wait up to 0.5 s x 2^n, at
most 8 s and `max_retry_wait`. At most `max_retries` repeats.
"""

import enum
import functools
import json
import logging
import os
import random
import re
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import quote
from uuid import uuid4

import httpx
from pydantic import BaseModel, TypeAdapter

from formsapi_client._files import Upload
from formsapi_client._version import API_VERSION, __version__
from formsapi_client.errors import ExportIncomplete, UnreadableResponse, retry_after_seconds
from formsapi_client.models import ExportEnd, SubmissionDetail

T = TypeVar("T")
log = logging.getLogger("formsapi_client")

DEFAULT_URL = "http://127.0.0.1:8000"
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0

# Every endpoint of the API, by the client method that calls it. Paths are
# relative to /v1; tests/client/test_contract.py holds this table equal to
# the service's OpenAPI document.
ROUTES: dict[str, tuple[str, str]] = {
    "forms.list": ("GET", "/forms"),
    "forms.create": ("POST", "/forms"),
    "forms.get": ("GET", "/forms/{formId}"),
    "forms.update": ("PATCH", "/forms/{formId}"),
    "forms.delete": ("DELETE", "/forms/{formId}"),
    "forms.summary": ("GET", "/forms/{formId}/summary"),
    "forms.timeseries": ("GET", "/forms/{formId}/summary/timeseries"),
    "forms.funnel": ("GET", "/forms/{formId}/summary/funnel"),
    "forms.refusals": ("GET", "/forms/{formId}/refusals"),
    "respondents.export": ("POST", "/respondents/export"),
    "respondents.erase": ("POST", "/respondents/erase"),
    "respondents.audit_entries": ("GET", "/audit-entries"),
    "submissions.list": ("GET", "/forms/{formId}/submissions"),
    "submissions.create": ("POST", "/forms/{formId}/submissions"),
    "submissions.changes": ("GET", "/forms/{formId}/submissions/changes"),
    "submissions.export": ("GET", "/forms/{formId}/submissions/export"),
    "submissions.get": ("GET", "/forms/{formId}/submissions/{submissionId}"),
    "submissions.edit": ("PATCH", "/forms/{formId}/submissions/{submissionId}"),
    "submissions.delete": ("DELETE", "/forms/{formId}/submissions/{submissionId}"),
    "partials.list": ("GET", "/forms/{formId}/partials"),
    "partials.delete": ("DELETE", "/forms/{formId}/partials/{partialId}"),
    "invitations.create": ("POST", "/forms/{formId}/invitations"),
    "invitations.list": ("GET", "/forms/{formId}/invitations"),
    "invitations.revoke": ("DELETE", "/forms/{formId}/invitations/{invitationId}"),
    "events.list": ("GET", "/events"),
    "webhook_endpoints.list": ("GET", "/webhook-endpoints"),
    "webhook_endpoints.create": ("POST", "/webhook-endpoints"),
    "webhook_endpoints.get": ("GET", "/webhook-endpoints/{endpointId}"),
    "webhook_endpoints.update": ("PATCH", "/webhook-endpoints/{endpointId}"),
    "webhook_endpoints.delete": ("DELETE", "/webhook-endpoints/{endpointId}"),
    "webhook_endpoints.rotate_secret": ("POST", "/webhook-endpoints/{endpointId}/rotate-secret"),
    "webhook_endpoints.test": ("POST", "/webhook-endpoints/{endpointId}/test"),
    "webhook_endpoints.deliveries": ("GET", "/webhook-endpoints/{endpointId}/deliveries"),
    "webhook_endpoints.delivery": (
        "GET",
        "/webhook-endpoints/{endpointId}/deliveries/{deliveryId}",
    ),
    "webhook_endpoints.resend": (
        "POST",
        "/webhook-endpoints/{endpointId}/deliveries/{deliveryId}/resend",
    ),
    "webhook_endpoints.recover": ("POST", "/webhook-endpoints/{endpointId}/recover"),
    "files.upload": ("POST", "/forms/{formId}/files"),
    "files.get": ("GET", "/files/{fileId}"),
    "files.download": ("GET", "/files/{fileId}/content"),
    "files.link": ("POST", "/files/{fileId}/links"),
}
# The writes the service deduplicates by Idempotency-Key.
KEYED = frozenset({"forms.create", "submissions.create", "submissions.edit"})
# The POSTs that change nothing (a link is signed, not stored), or only add
# an audit entry (an export read again is logged again, and nothing else).
PURE = frozenset({"files.link", "respondents.export"})


class Replay(enum.Enum):
    """Whether a call may be sent again after an unclear outcome."""

    SAFE = "safe"  # a read, or a write carrying an Idempotency-Key the service honours
    UNSAFE = "unsafe"  # a write the service does not deduplicate


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request, built once and sent as often as the policy allows."""

    method: str
    path: str
    read: Callable[[bytes], T]
    params: dict[str, str | int] | None = None
    body: bytes | None = None
    headers: dict[str, str] | None = None
    replay: Replay = Replay.SAFE
    upload: Upload | None = None  # a body read from a file, a chunk at a time, per attempt

    def may_repeat(self) -> bool:
        """Whether a repeat could send the same body (an upload may not)."""
        return self.upload is None or self.upload.replayable


JSON_BODY = {"Content-Type": "application/json"}


def call(
    name: str,
    read: Callable[[bytes], T],
    *,
    ids: dict[str, str] | None = None,
    params: Mapping[str, str | int | None] | None = None,
    body: BaseModel | None = None,
    idempotency_key: str | None = None,
    headers: dict[str, str] | None = None,
    upload: Upload | None = None,
    nulls: Sequence[str] = (),
) -> Call[T]:
    """One call of the API; `nulls`: body fields sent as null (a setting
    cleared), which a model's None never is."""
    method, path = ROUTES[name]
    if ids:
        # Quoted whole: an id can never reach another path ("../").
        path = path.format_map({k: quote(v, safe="") for k, v in ids.items()})
    content = None
    if body is not None:
        # None is "not sent" for every field; a None inside `answers` (remove it) stays.
        content = body.__pydantic_serializer__.to_json(body, by_alias=True, exclude_none=True)
        if nulls:
            content = json.dumps({**json.loads(content), **dict.fromkeys(nulls)}).encode()
        headers = {**JSON_BODY, **(headers or {})}
    replay = Replay.SAFE if method == "GET" or name in PURE else Replay.UNSAFE
    if name in KEYED:
        # The same key on every attempt is what makes the repeat harmless.
        headers = {**(headers or {}), "Idempotency-Key": idempotency_key or str(uuid4())}
        replay = Replay.SAFE
    query = {k: v for k, v in params.items() if v is not None} if params else None
    return Call(method, path, read, query, content, headers, replay, upload)


def nothing(_: bytes) -> None:
    return None


def from_model(model: type[T]) -> Callable[[bytes], T]:
    """The model's JSON reader (pydantic-core, built once at import)."""
    return TypeAdapter(model).validate_json


# Connection failures before the request left: nothing was sent.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Failures after it may have been sent (and acted on).
MAYBE_SENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True, slots=True)
class Policy:
    max_retries: int
    max_retry_wait: float

    def after_error(self, call: Call[object], error: Exception, attempt: int) -> float | None:
        """Seconds to wait before repeating after a connection failure, or None."""
        if attempt >= self.max_retries or not call.may_repeat():
            return None
        if isinstance(error, NOT_SENT) or (
            call.replay is Replay.SAFE and isinstance(error, MAYBE_SENT)
        ):
            return self.backoff(attempt)
        return None

    def after_status(
        self, call: Call[object], response: httpx.Response, attempt: int
    ) -> float | None:
        """Seconds to wait before repeating after an error status, or None."""
        status = response.status_code
        if (
            attempt >= self.max_retries
            or status not in (429, 502, 503, 504)
            or not call.may_repeat()
        ):
            return None
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        if call.replay is Replay.UNSAFE and not (
            status == 429 or (status == 503 and retry_after is not None)
        ):
            return None
        if retry_after is None:
            return self.backoff(attempt)
        return retry_after if retry_after <= self.max_retry_wait else None

    def backoff(self, attempt: int) -> float:
        ceiling = min(BACKOFF_BASE * 2**attempt, BACKOFF_CAP, self.max_retry_wait)
        return random.uniform(0, ceiling)  # noqa: S311 - jitter, not a secret


def read(call: Call[T], response: httpx.Response) -> T:
    """The call's result read from a successful response's body."""
    try:
        return call.read(response.content)
    except ValueError as error:  # what orjson, json and pydantic raise
        kind = response.headers.get("content-type", "no content type")
        raise UnreadableResponse(
            f"{call.method} {response.url} answered {response.status_code} ({kind}) "
            "with a body that is not the API's"
        ) from error


def log_retry(call: Call[object], cause: str, wait: float, attempt: int, policy: Policy) -> None:
    log.info(
        "%s %s: %s; retry %d of %d in %.2f s",
        call.method,
        call.path,
        cause,
        attempt + 1,
        policy.max_retries,
        wait,
    )


def configure(
    base_url: str | None, api_key: str | None, max_retries: int, max_retry_wait: float
) -> tuple[str, dict[str, str], Policy]:
    """The /v1 base URL, the headers every request carries, and the retry policy."""
    root = (base_url or os.environ.get("FORMSAPI_URL") or DEFAULT_URL).rstrip("/")
    key = api_key or os.environ.get("FORMSAPI_API_KEY")
    if not key:
        raise ValueError("No API key: pass api_key or set FORMSAPI_API_KEY.")
    if max_retries < 0 or max_retry_wait < 0:
        raise ValueError("max_retries and max_retry_wait must not be negative.")
    try:
        parsed = httpx.URL(root)
    except httpx.InvalidURL as error:
        raise ValueError(f"The server's URL {shown_url(root)!r} is not one: {error}.") from None
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.host
        or parsed.userinfo
        or parsed.query
        or parsed.fragment
    ):
        # The key goes in a header; a password in the URL would be printed.
        raise ValueError(
            f"The server's URL must be http(s)://host[:port][/path] (no password, "
            f"query or fragment), not {shown_url(root)!r}."
        )
    headers = {
        "Authorization": f"Bearer {key}",
        "User-Agent": f"formsapi-client/{__version__} httpx/{httpx.__version__}",
    }
    api = f"{root.removesuffix('/' + API_VERSION)}/{API_VERSION}"
    return api, headers, Policy(max_retries, max_retry_wait)


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS context every client of the process shares, as httpx makes it
    (certifi's CAs, or SSL_CERT_FILE / SSL_CERT_DIR as set when the first
    client is made): httpx otherwise reads the whole CA bundle again for each
    client, tens of milliseconds of CPU, which a client made per task pays."""
    return httpx.create_ssl_context()


def shown_url(url: str) -> str:
    """A URL to print (a server's or a database's), parsed or not: its
    password and any query or fragment hidden (libpq takes `?password=`; a
    token may ride in either). It errs on hiding too much: it is only shown."""
    scheme, slashes, rest = url.partition("//")
    userinfo, at, rest = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        rest = (f"{user}:***@" if colon and "/" not in user else "***@") + rest
    if found := re.search(r"[?#]", rest):
        rest = rest[: found.end()] + "***"
    return f"{scheme}{slashes}{rest}"


_ROWS: TypeAdapter[list[SubmissionDetail]] = TypeAdapter(list[SubmissionDetail])


class ExportReader:
    """Turns an NDJSON export's chunks into rows, and knows whether it ended
    with its last line (`{"end": true, "changeSeq": N, "count": n}`)."""

    def __init__(self, headers: httpx.Headers) -> None:
        try:
            self.change_seq = int(headers["x-change-seq"])
        except (KeyError, ValueError):
            raise UnreadableResponse("the export's answer has no X-Change-Seq header") from None
        self.count = 0
        self.last_change_seq: int | None = None
        self.end: ExportEnd | None = None
        self._rest = b""

    def feed(self, chunk: bytes) -> list[SubmissionDetail]:
        if b"\n" not in chunk:
            self._rest += chunk
            return []
        lines = (self._rest + chunk).split(b"\n")
        self._rest = lines.pop()
        if lines and lines[-1].startswith(b'{"end"'):
            self.end = ExportEnd.model_validate_json(lines.pop())
        lines = [line for line in lines if line]
        if not lines:
            return []
        # One parse per chunk, not per line: the rows as one JSON array.
        rows = _ROWS.validate_json(b"[" + b",".join(lines) + b"]")
        self.count += len(rows)
        self.last_change_seq = rows[-1].change_seq
        return rows

    def finish(self) -> None:
        """Raise ExportIncomplete unless the export ended as it should."""
        if self._rest.strip() or self.end is None:
            raise self.cut_short("the export ended without its last line")
        if self.end.count != self.count:
            raise self.cut_short(f"read {self.count} rows; the export says {self.end.count}")

    def cut_short(self, why: str) -> ExportIncomplete:
        return ExportIncomplete(
            f"Export cut short ({why}): start again, or continue with the change feed "
            f"after {self.last_change_seq}.",
            self.last_change_seq,
        )
