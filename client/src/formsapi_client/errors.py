"""What the client raises. Every error the API answers is an RFC 9457 problem
document, raised as the ApiError subclass of its status; not reaching the
service at all (after the retries that were safe) raises ConnectionFailed.
Both derive from FormsapiClientError."""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from pydantic import TypeAdapter, ValidationError

from formsapi_client.models import FieldError, InvalidParam, Problem


class FormsapiClientError(Exception):
    """The base of everything this client raises."""


class ConnectionFailed(FormsapiClientError):
    """The service could not be reached, or the connection broke mid-request,
    and retrying was not safe (a write that may have been applied) or did not
    help. The httpx error is the `__cause__`."""


class UnreadableResponse(FormsapiClientError):
    """A success answered with a body that is not what the API sends (a proxy's
    page, a server of another version): the parse error is the `__cause__`."""


class ExportIncomplete(FormsapiClientError):
    """An export ended without its last line (the connection broke, or the form
    was deleted meanwhile). Start it again, or continue with the change feed
    after `last_change_seq`, the last row read (None: no row was read)."""

    def __init__(self, message: str, last_change_seq: int | None) -> None:
        super().__init__(message)
        self.last_change_seq = last_change_seq


class ApiError(FormsapiClientError):
    """A problem document the API answered: its `status`, `type`
    (`/problems/{slug}`), `title` and `detail`, field `errors` (422, each with
    a JSON pointer into the body), `invalid_params` (400), any other member in
    `extensions` (`requiredScope`, `allowedTransitions`, ...) and the
    response's `headers`."""

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        errors: Sequence[FieldError] = (),
        invalid_params: Sequence[InvalidParam] = (),
        headers: Mapping[str, str] | None = None,
        *,
        instance: str | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        what = [f"{e.pointer}: {e.detail}" for e in errors]
        what += [f"{p.name} ({p.in_}): {p.reason}" for p in invalid_params]
        super().__init__(f"{status} {title}: {detail}" + "".join(f"\n  {w}" for w in what))
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.errors = list(errors)
        self.invalid_params = list(invalid_params)
        self.headers = httpx.Headers(headers or {})
        self.instance = instance
        self.extensions = dict(extensions or {})

    @property
    def retry_after(self) -> float | None:
        """Seconds the service asked to wait (`Retry-After`), if it did."""
        return retry_after_seconds(self.headers.get("retry-after"))


class BadRequest(ApiError):
    """400: a parameter is invalid (`invalid_params` names each) or the body is not I-JSON."""


class Unauthorized(ApiError):
    """401: the API key is missing, malformed, unknown or revoked."""


class Forbidden(ApiError):
    """403: the key lacks the scope (`extensions["requiredScope"]`)."""


class NotFound(ApiError):
    """404: no such form, submission or endpoint in the key's organization."""


class Conflict(ApiError):
    """409: the form's (or endpoint's) state forbids it."""


class Gone(ApiError):
    """410."""


class CursorExpired(Gone):
    """410 `cursor-expired` (change feed) or `event-cursor-expired` (events):
    the cursor is older than what is kept. Copy again from the start."""


class PreconditionFailed(ApiError):
    """412: `If-Match` is stale; `headers["etag"]` is the current one."""


class PayloadTooLarge(ApiError):
    """413: the body is too large; for an upload, over the file question's
    `maxSize` or the server's limit (`extensions["limit"]`, in bytes)."""


class UnsupportedMediaType(ApiError):
    """415: for an upload, its bytes are of a type the file question does not
    accept (`extensions["contentType"]`, what they are; `extensions["accept"]`)."""


class ValidationFailed(ApiError):
    """422: the body is invalid; `errors` lists each problem with its JSON pointer."""


class RateLimited(ApiError):
    """429: too many requests; `retry_after` says how long to wait."""


class ServerError(ApiError):
    """5xx."""


class ServiceUnavailable(ServerError):
    """503: the database is busy or unreachable."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: ValidationFailed,
    429: RateLimited,
    503: ServiceUnavailable,
}


_FIELD_ERRORS: TypeAdapter[list[FieldError]] = TypeAdapter(list[FieldError])


def error_from_response(response: httpx.Response) -> ApiError:
    """The ApiError for an error response (its body read)."""
    status = response.status_code
    kind = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    try:
        problem = Problem.model_validate_json(response.content)
    except ValidationError:
        # Not a problem document: a proxy's page, say.
        title = response.reason_phrase or f"HTTP {status}"
        text = response.content[:500].decode("utf-8", "replace").strip()
        return kind(status, "about:blank", title, text or title, headers=response.headers)
    extensions = dict(problem.model_extra or {})
    errors: list[FieldError] = []
    if "errors" in extensions:
        try:
            errors = _FIELD_ERRORS.validate_python(extensions["errors"])
        except ValidationError:
            pass  # not the shape this client knows: left in `extensions`
        else:
            del extensions["errors"]
    if kind is Gone and problem.type.endswith("cursor-expired"):
        kind = CursorExpired
    return kind(
        problem.status,
        problem.type,
        problem.title,
        problem.detail,
        errors,
        problem.invalid_params or (),
        response.headers,
        instance=problem.instance,
        extensions=extensions,
    )


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` in seconds: delta-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())
