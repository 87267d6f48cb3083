"""Dependencies every /v1 endpoint shares: the request's session and the caller."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Depends, Header, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import async_sessionmaker
from starlette import types as asgi

from formsapi.api_key import service as api_key_service
from formsapi.api_key.cache import PrincipalCache
from formsapi.api_key.principal import Principal
from formsapi.api_key.scopes import Scope
from formsapi.api_key.service import require_scope
from formsapi.db.session import ReadSession, WriteSession, session_scope
from formsapi.errors import MalformedJSON, Unauthorized, UnsupportedMediaType
from formsapi.models import Plan
from formsapi.ratelimit.service import Decision, RateLimiter, enforce
from formsapi.services import services


async def get_session(request: Request) -> AsyncIterator[WriteSession]:
    """The unit of work of a request that writes: committed when the endpoint
    returns, rolled back on any error."""
    state = services(request)
    sessionmaker: async_sessionmaker[WriteSession] = state.sessionmaker
    async with session_scope(sessionmaker, state.auth_epoch.after_commit) as session:
        yield session


# scope="function": the session commits when the endpoint returns, before the
# response is sent. The default ("request") closed it after the response, so a
# client could be told 201 for a write whose commit then failed.
SessionDep = Annotated[WriteSession, Depends(get_session, scope="function")]


async def get_read_session(request: Request) -> ReadSession:
    """A session for endpoints that only read: each statement in autocommit,
    one round trip instead of BEGIN, SELECT, COMMIT.

    Not a `yield` dependency: FastAPI's exit handling for those cost a share of
    a page-1 read, whose statements borrow a pooled connection of their own and
    leave the session unused (bench/RESULTS.md). CloseReadSession closes it
    after the response, when it was used."""
    session: ReadSession = services(request).read_sessionmaker()
    request.state.read_session = session
    return session


ReadSessionDep = Annotated[ReadSession, Depends(get_read_session)]


class CloseReadSession:
    """Returns the connection of the request's read session, if it took one, as
    the response starts (or the request fails): never held while the client
    reads the response."""

    def __init__(self, app: asgi.ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        async def close() -> None:
            session = scope.get("state", {}).get("read_session")
            if session is not None and session.in_transaction():
                # Shielded: a cancelled request must still hand the connection back.
                await asyncio.shield(session.close())

        async def send_after_closing(message: asgi.Message) -> None:
            if message["type"] == "http.response.start":
                await close()
            await send(message)

        try:
            await self.app(scope, receive, send_after_closing)
        finally:
            await close()


def client_ip(request: Request) -> str:
    # ProxyHeadersMiddleware has already replaced the peer with the forwarded
    # client when, and only when, the peer is a trusted proxy.
    return request.client.host if request.client else "unknown"


async def get_principal(request: Request) -> Principal:
    """Authenticate the bearer key, then count the request against the IP's limit.

    Requests without a valid key still count, at the standard rate, so guessing
    keys is throttled like anything else. For a key this worker has seen, the
    count and the auth epoch that says whether its cached lookup still holds
    take one Redis round trip.
    """
    state = services(request)
    limiter: RateLimiter = state.rate_limiter
    cache: PrincipalCache = state.principal_cache
    ip = client_ip(request)
    decision: Decision | None = None
    principal: Principal | None = None
    failure: Unauthorized | None = None
    try:
        secret_hash = api_key_service.secret_hash_of(request.headers.get("authorization"))
        epoch = None
        known_plan = cache.plan_of(secret_hash)
        if limiter.enabled and known_plan is not None:
            decision, epoch = await limiter.hit(ip, known_plan, read=cache.epoch.key)
        principal = await api_key_service.authenticate(
            state.read_sessionmaker, secret_hash, cache, state.last_use, epoch
        )
    except Unauthorized as error:
        failure = error
    if limiter.enabled:
        plan = principal.plan if principal else Plan.standard
        # Counted again only when the key turned out not to be what the cache
        # said (revoked, or its plan changed): the request counts where it belongs.
        if decision is None or decision.limit != limiter.limit_of(plan):
            decision, _ = await limiter.hit(ip, plan)
        # A 429 carries its own headers; others get them from RateLimitHeaders.
        request.state.rate_limit_headers = enforce(decision).headers()
    if failure is not None:
        raise failure
    assert principal is not None
    return principal


async def _caller(request: Request) -> Principal:
    principal: Principal = request.state.principal  # set by GuardedRoute
    return principal


PrincipalDep = Annotated[Principal, Depends(_caller)]


def requires(scope: Scope) -> dict[str, Any]:
    """A /v1 route's `openapi_extra`: the scope its key needs, as OpenAPI 3.1
    lists the roles a bearer scheme requires. GuardedRoute enforces it."""
    return {"security": [{"HTTPBearer": [str(scope)]}]}


class GuardedRoute(APIRoute):
    """A /v1 route: the caller is authenticated, counted against the rate limit,
    and checked for the route's scope and (for a body) its media type before
    FastAPI reads or validates anything the client sent. A request without the
    right key costs no parsing, and a read-only key meets 403, not 415 or 422."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        [requirement] = (self.openapi_extra or {})["security"]
        [scope] = requirement["HTTPBearer"]
        takes_body = self.body_field is not None
        before: BeforeBody | None = getattr(self.endpoint, "before_body", None)

        async def guarded(request: Request) -> Response:
            await admit(request, Scope(scope), takes_body, before)
            return await handler(request)

        return guarded


# A check of a request its body's headers decide (its size), once the caller
# is known and before its body is read (see before_body).
BeforeBody = Callable[[Request, Principal], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Any])


def before_body(check: BeforeBody) -> Callable[[F], F]:
    """Has a GuardedRoute's endpoint `check` its request before the body is
    read: what refuses a request by its size costs no parsing."""

    def marked(endpoint: F) -> F:
        endpoint.before_body = check  # type: ignore[attr-defined]
        return endpoint

    return marked


async def admit(
    request: Request, scope: Scope, takes_body: bool, before: BeforeBody | None = None
) -> Any:
    """The caller, counted and checked for `scope`; with `takes_body`, the
    body, checked to be JSON (see check_json) and returned parsed. What every
    /v1 request passes before anything it sent is validated."""
    # Looked up at call time: the benchmark kit swaps it to price it.
    request.state.principal = principal = await get_principal(request)
    require_scope(principal, scope)
    if not takes_body:
        return None
    require_json(request)
    if before is not None:
        await before(request, principal)
    return check_json(await request.body())


MAX_JSON_DEPTH = 32  # the deepest a form's blocks go is 4


def check_json(body: bytes) -> Any:
    """400 for a body that is not I-JSON (RFC 7493: UTF-8 text, no lone
    surrogates, numbers a double holds) or that nests deeper than
    MAX_JSON_DEPTH: what no encoder, validator or database downstream is
    asked to cope with. orjson checks the first three in C, in microseconds.
    The document, parsed."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise MalformedJSON(f"The request body is not valid JSON: {error}.") from None
    level = [document]
    for _ in range(MAX_JSON_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return document
    raise MalformedJSON(f"The request body nests deeper than {MAX_JSON_DEPTH} levels.")


def require_json(request: Request) -> None:
    """415 for a body that is not JSON, before anything tries to parse it."""
    content_type = request.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "application/json" and not (
        media.startswith("application/") and media.endswith("+json")
    ):
        raise UnsupportedMediaType(
            f"Send the body as JSON with 'Content-Type: application/json' "
            f"(got {content_type or 'no Content-Type'!r})."
        )


IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x20-\x7e]+$",  # printable ASCII: what a header carries, no NUL
        description="Retries with the same key and body return the first response "
        "and create nothing new (kept 24 hours).",
    ),
]
