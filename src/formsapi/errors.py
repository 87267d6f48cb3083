"""The error tree: each kind of problem the service answers, with its status,
title and `type` slug, and its OpenAPI description.

Services raise FormsAPIError subclasses; formsapi.problems renders them as
RFC 9457 problem documents. Each class's docstring is what its problem type
URI (`/problems/{slug}`) shows people.
"""

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

PROBLEM_JSON = "application/problem+json"


class InvalidParam(BaseModel):
    name: str
    in_: str = Field(alias="in", description="query, path or header")
    reason: str


class Problem(BaseModel):
    """RFC 9457 problem details, the body of every error."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(examples=["/problems/invalid-parameters"])
    title: str
    status: int
    detail: str
    instance: str | None = None
    invalid_params: list[InvalidParam] | None = Field(default=None, alias="invalidParams")


def problem_responses(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for the given error statuses."""
    texts = {**DEFAULT_DESCRIPTIONS, **{int(k[1:]): v for k, v in descriptions.items()}}
    return {
        status: {"model": Problem, "description": texts[status], "content": {PROBLEM_JSON: {}}}
        for status in statuses
    }


DEFAULT_DESCRIPTIONS = {
    400: "A parameter is invalid; `invalidParams` names each one.",
    401: "The API key is missing, malformed, unknown or revoked.",
    403: "The API key lacks the scope this endpoint needs.",
    404: "No such form (or submission) in this organization.",
    408: "The request body did not arrive in time (`FORMSAPI_BODY_TIMEOUT`).",
    410: "The change feed cannot continue from `after`: copy the form again from "
    "`after=0` (`/problems/cursor-expired`).",
    412: "`If-Match` names a version of the submission that is no longer its latest.",
    409: "The request conflicts with the form's state: a status that does not allow it, "
    "a slug in use, or submissions that need confirming.",
    413: "The request body is larger than the service accepts.",
    415: "The request body is not JSON.",
    422: "The body is invalid; `errors` lists each problem with its JSON pointer.",
    429: "Too many requests from this address; see `Retry-After`.",
}


class FormsAPIError(Exception):
    """Something went wrong on the service's side. Nothing you sent caused it;
    the error is logged with the request's id. Retry later, and if it persists,
    tell whoever runs the service."""

    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal Server Error"
    slug: ClassVar[str] = "internal"

    def __init__(
        self,
        detail: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.headers = dict(headers or {})
        self.extensions = extensions


class BadRequest(FormsAPIError):
    """The request cannot be taken as it is; `detail` says what is wrong."""

    status = 400
    title = "Bad Request"
    slug = "bad-request"


class MalformedJSON(FormsAPIError):
    """The body is not JSON the service takes: it must be I-JSON (RFC 7493:
    UTF-8, no lone surrogates, no NaN or Infinity, numbers a double holds),
    nested at most 32 levels deep. `detail` says where it went wrong."""

    status = 400
    title = "Malformed JSON"
    slug = "malformed-json"


class InvalidParameters(FormsAPIError):
    """A query, path or header parameter is invalid (`limit=0`, `page=abc`, an
    id with characters no id has, ...). `invalidParams` names each one, where it
    was and why."""

    status = 400
    title = "Invalid parameters"
    slug = "invalid-parameters"


class Unauthorized(FormsAPIError):
    """The API key is missing, malformed, unknown or revoked. Send it as
    `Authorization: Bearer fapi_...`; a revoked key needs replacing in the
    settings area under API keys."""

    status = 401
    title = "Unauthorized"
    slug = "unauthorized"

    def __init__(self, detail: str) -> None:
        # RFC 6750: tell the client which scheme we expect.
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="formsapi"'})


class Forbidden(FormsAPIError):
    """The key (or person) may not do this: the key lacks the scope the endpoint
    needs (`requiredScope` names it), or its creator's role does not allow it."""

    status = 403
    title = "Forbidden"
    slug = "forbidden"


class NotFound(FormsAPIError):
    """There is no such form, submission, key, member or invitation in your
    organization. Another organization's object answers exactly the same."""

    status = 404
    title = "Not Found"
    slug = "not-found"


class FormNotFound(NotFound):
    """There is no such form in your organization."""

    def __init__(self, form_id: str) -> None:
        super().__init__(f"No form with id '{form_id}'.")


class MethodNotAllowed(FormsAPIError):
    """The path exists, but not for this HTTP method; the `Allow` header lists
    those it takes."""

    status = 405
    title = "Method Not Allowed"
    slug = "method-not-allowed"


class Conflict(FormsAPIError):
    """The request conflicts with the current state of what it acts on;
    `detail` says how."""

    status = 409
    title = "Conflict"
    slug = "conflict"


class ValidationFailed(FormsAPIError):
    """The body is JSON but invalid: `errors` lists every problem, each with the
    JSON pointer (RFC 6901) of the field it is about. Fix them all and send again."""

    status = 422
    title = "Validation failed"
    slug = "validation-failed"

    def __init__(self, detail: str, errors: list[dict[str, str]]) -> None:
        super().__init__(detail, errors=errors)


class RequestTimeout(FormsAPIError):
    """The request body did not arrive in full within the time the service
    allows (`FORMSAPI_BODY_TIMEOUT`, 10 s by default). Send it again."""

    status = 408
    title = "Request Timeout"
    slug = "request-timeout"


class PayloadTooLarge(FormsAPIError):
    """The body is larger than the service accepts (`FORMSAPI_MAX_BODY_BYTES`,
    1 MiB by default)."""

    status = 413
    title = "Payload Too Large"
    slug = "payload-too-large"


class UnsupportedMediaType(FormsAPIError):
    """The body is not JSON: send it with `Content-Type: application/json`."""

    status = 415
    title = "Unsupported Media Type"
    slug = "unsupported-media-type"


class Busy(FormsAPIError):
    """Every database connection (or SQLite's write lock) stayed busy for the
    whole wait the service allows. Nothing was done: retry after `Retry-After`."""

    status = 503
    title = "Service Busy"
    slug = "busy"


class DatabaseUnavailable(FormsAPIError):
    """The database cannot be reached right now. A read, or a write sent with an
    `Idempotency-Key`, can be retried after `Retry-After`; a write without one
    may or may not have been saved, so read before retrying it."""

    status = 503
    title = "Database Unavailable"
    slug = "database-unavailable"


class RateLimited(FormsAPIError):
    """Too many requests from this address in the last minute (120 a minute on
    the standard plan, 1,200 on pro). Wait `Retry-After` seconds."""

    status = 429
    title = "Too Many Requests"
    slug = "rate-limited"


class NotReady(FormsAPIError):
    """The instance cannot serve requests: its database does not answer. A load
    balancer takes it out of rotation until `/readyz` answers 200 again."""

    status = 503
    title = "Service Unavailable"
    slug = "not-ready"


def registry() -> dict[str, type[FormsAPIError]]:
    """Every problem type by slug: each class that names its own."""
    found: dict[str, type[FormsAPIError]] = {}
    queue: list[type[FormsAPIError]] = [FormsAPIError]
    while queue:
        kind = queue.pop()
        if "slug" in vars(kind):
            found.setdefault(kind.slug, kind)
        queue.extend(kind.__subclasses__())
    return found
