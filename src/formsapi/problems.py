"""Problems as RFC 9457 documents: the one place errors are rendered, and the
handlers that turn every exception into one.

Bad query, path or header parameters answer 400 naming each parameter; a bad
JSON body answers 422 with a JSON pointer per field (400 when it is not JSON
at all). Unexpected errors are logged and answer a generic 500.
"""

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Match

from formsapi.db.errors import locked, unreachable
from formsapi.errors import (
    PROBLEM_JSON,
    BadRequest,
    Busy,
    Conflict,
    DatabaseUnavailable,
    Forbidden,
    FormsAPIError,
    InvalidParameters,
    MalformedJSON,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RequestTimeout,
    Unauthorized,
    UnsupportedMediaType,
)
from formsapi.kit.redact import redact_url

log = logging.getLogger("formsapi")


_STATUS_SLUGS: dict[int, type[FormsAPIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    408: RequestTimeout,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
}


def problem_response(
    status: int,
    title: str,
    detail: str,
    *,
    slug: str,
    instance: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extensions: Any,
) -> Response:
    body: dict[str, Any] = {
        # Relative URIs resolve against the service; /problems/{slug} documents each.
        "type": f"/problems/{slug}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body.update(extensions)
    try:
        content = orjson.dumps(body)
    except orjson.JSONEncodeError:
        # Text from the request that no UTF-8 encoder takes (a lone surrogate in
        # a name the problem quotes): the standard library escapes it instead.
        content = json.dumps(body, default=str).encode()
    return Response(content, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def _location_text(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc)


def _json_pointer(loc: Sequence[Any], body: Any = None, missing: bool = False) -> str:
    """RFC 6901 pointer into the request body. Pydantic puts the tag of a
    discriminated union into the location (blocks/0/short_text/title); such a
    segment names nothing in the body, so it is dropped, unless it is the
    missing field the error is about."""
    parts: list[str] = []
    node = body
    for index, part in enumerate(loc):
        names_missing_field = missing and index == len(loc) - 1
        if (
            isinstance(node, dict)
            and isinstance(part, str)
            and part not in node
            and not names_missing_field
        ):
            continue
        parts.append(str(part))
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _validation_problem(request: Request, exc: RequestValidationError) -> Response:
    errors = exc.errors()
    if any(error["type"] == "json_invalid" for error in errors):
        return problem_response(
            400,
            MalformedJSON.title,
            "The request body is not valid JSON.",
            slug=MalformedJSON.slug,
            instance=request.url.path,
        )
    body_errors = [e for e in errors if e["loc"] and e["loc"][0] == "body"]
    if body_errors:
        return problem_response(
            422,
            "Validation failed",
            "The request body has invalid fields.",
            slug="validation-failed",
            instance=request.url.path,
            errors=[
                {
                    "pointer": _json_pointer(e["loc"][1:], exc.body, e["type"] == "missing"),
                    "detail": e["msg"].removeprefix("Value error, "),
                }
                for e in body_errors
            ],
        )
    invalid = [
        {"name": _location_text(e["loc"][1:]), "in": e["loc"][0], "reason": e["msg"]}
        for e in errors
    ]
    names = ", ".join(f"'{p['name']}'" for p in invalid)
    return problem_response(
        400,
        InvalidParameters.title,
        f"Invalid value for {names}: " + "; ".join(p["reason"] for p in invalid) + ".",
        slug=InvalidParameters.slug,
        instance=request.url.path,
        invalidParams=invalid,
    )


def _logged(request: Request) -> str:
    """The path as a log line may quote it: without the secret of a link."""
    return redact_url(request.url.path)


# The order a 405's `Allow` lists methods in; any other after these.
_METHOD_ORDER = {
    method: index
    for index, method in enumerate(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
}


def _allowed_methods(request: Request) -> str:
    """Every method the request's resource takes, for a 405's `Allow` (RFC 9110
    asks for all of them). Starlette's router names only the methods of the
    first route whose path matched, and a resource's methods are often spread
    over several routes (GET lists, POST adds): those of the same path as that
    first one."""
    methods: set[str] = set()
    first: str | None = None
    for route in request.app.router.routes:
        taken = getattr(route, "methods", None)
        if not taken or first not in (None, getattr(route, "path", None)):
            continue
        if route.matches(request.scope)[0] is not Match.NONE:
            first = getattr(route, "path", None)
            methods |= taken
    last = len(_METHOD_ORDER)
    return ", ".join(sorted(methods, key=lambda method: (_METHOD_ORDER.get(method, last), method)))


def install_handlers(app: FastAPI) -> None:
    async def on_formsapi_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, FormsAPIError)
        return problem_response(
            exc.status,
            exc.title,
            exc.detail,
            slug=exc.slug,
            instance=request.url.path,
            headers=exc.headers,
            **exc.extensions,
        )

    async def on_validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return _validation_problem(request, exc)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        # Starlette's own errors: unknown route, wrong method.
        assert isinstance(exc, StarletteHTTPException)
        kind = _STATUS_SLUGS.get(exc.status_code)
        slug = kind.slug if kind else f"http-{exc.status_code}"
        title = kind.title if kind else "HTTP Error"
        detail = exc.detail if isinstance(exc.detail, str) else title
        headers = exc.headers
        if exc.status_code == 405 and (allowed := _allowed_methods(request)):
            headers = {**(headers or {}), "Allow": allowed}
        return problem_response(
            exc.status_code,
            title,
            detail,
            slug=slug,
            instance=request.url.path,
            headers=headers,
        )

    async def on_pool_timeout(request: Request, exc: Exception) -> Response:
        # Every database connection stayed busy for the whole pool timeout.
        log.warning("no database connection free for %s %s", request.method, _logged(request))
        busy = Busy(
            "Every database connection is busy. Retry in a second.", headers={"Retry-After": "1"}
        )
        return await on_formsapi_error(request, busy)

    async def on_database_error(request: Request, exc: Exception) -> Response:
        if locked(exc):
            # SQLite's write lock stayed taken for the whole busy timeout.
            log.warning("database busy for %s %s", request.method, _logged(request))
            busy = Busy(
                "The database is busy with other writes. Retry in a second.",
                headers={"Retry-After": "1"},
            )
            return await on_formsapi_error(request, busy)
        if not unreachable(exc):
            return await on_unexpected(request, exc)
        # A restart or an outage, not a bug: the pool reconnects on its next checkout.
        cause = exc.orig if isinstance(exc, DBAPIError) else exc
        # The type only: a statement's text stays out of the log.
        log.warning(
            "database unavailable for %s %s: %s",
            request.method,
            _logged(request),
            type(cause).__name__,
        )
        if request.method in ("GET", "HEAD") or request.headers.get("idempotency-key"):
            detail = "The database cannot be reached right now. Retry in a second."
            headers = {"Retry-After": "1"}
        else:
            # A write whose commit lost its connection may have been saved:
            # no Retry-After to invite a blind retry that could save it twice.
            detail = (
                "The database cannot be reached right now; the write may or may not "
                "have been saved. Retry with an Idempotency-Key, or read before retrying."
            )
            headers = {}
        return await on_formsapi_error(request, DatabaseUnavailable(detail, headers=headers))

    async def on_client_gone(request: Request, exc: Exception) -> Response:
        # A client that closed its connection mid-body (a dropped upload): not a
        # fault of ours, so one line and no traceback. Nobody reads the answer.
        log.warning("client went away mid-request: %s %s", request.method, _logged(request))
        return problem_response(
            400,
            BadRequest.title,
            "The connection closed before the request's body arrived.",
            slug=BadRequest.slug,
            instance=request.url.path,
        )

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        request_id = request.headers.get("x-request-id", "")
        log.exception(
            "unhandled error on %s %s (request id %r)", request.method, _logged(request), request_id
        )
        return problem_response(
            500,
            "Internal Server Error",
            "Something went wrong on our side.",
            slug="internal",
            instance=request.url.path,
        )

    app.add_exception_handler(FormsAPIError, on_formsapi_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(PoolTimeout, on_pool_timeout)
    app.add_exception_handler(ClientDisconnect, on_client_gone)
    # OSError: refused, reset, timed out or unresolved connections, and the
    # hot reads' DatabaseUnreachable; on_database_error sends the rest on to 500.
    for error in (DBAPIError, OSError):
        app.add_exception_handler(error, on_database_error)
    app.add_exception_handler(Exception, on_unexpected)
