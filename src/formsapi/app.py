"""create_app(): the ASGI application."""

import asyncio
import copy
import gc
import inspect
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache, partial
from pathlib import Path
from typing import Annotated, Any

import fastapi_offline
from fastapi import APIRouter, FastAPI, Header
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlalchemy.pool import QueuePool
from starlette.routing import BaseRoute
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from formsapi import __version__, web
from formsapi.admission.service import purge_lapsed
from formsapi.api_key.cache import PrincipalCache
from formsapi.api_key.epoch import AuthEpoch
from formsapi.api_key.last_use import LastUse
from formsapi.config import Settings, get_settings
from formsapi.db.engine import autocommit, create_engine, database_file
from formsapi.db.session import create_read_sessionmaker, create_write_sessionmaker
from formsapi.dependencies import CloseReadSession
from formsapi.errors import PROBLEM_JSON, NotReady
from formsapi.event import service as event_service
from formsapi.event.endpoints import router as events_router
from formsapi.event.retention import purge_events
from formsapi.file import service as file_service
from formsapi.file.endpoints import links_router
from formsapi.file.endpoints import router as files_router
from formsapi.file.storage import Storages
from formsapi.form import service as form_service
from formsapi.form.endpoints import router as forms_router
from formsapi.form.invitations import router as invitations_router
from formsapi.form.work import WAITING_UNITS
from formsapi.funnel import service as funnel_service
from formsapi.funnel.buffer import Buffer as FunnelBuffer
from formsapi.hosted import routes as hosted
from formsapi.kit.fair import FairShare
from formsapi.kit.loops import Background
from formsapi.kit.mail import Mailer
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.kit.sweeps import keep_sweeping
from formsapi.kit.turns import Turns
from formsapi.notification.retention import purge_copy_counts, purge_mails
from formsapi.notification.sender import Sender, fan_out
from formsapi.notification.service import CopyRules
from formsapi.partial.endpoints import router as partials_router
from formsapi.partial.retention import purge_partials
from formsapi.problems import install_handlers, problem_response
from formsapi.ratelimit.middleware import RateLimitHeaders
from formsapi.ratelimit.service import (
    FormSaveThrottle,
    PartialThrottle,
    PasswordThrottle,
    PublicPostThrottle,
    RateLimiter,
    ResumeMailThrottle,
    SignInThrottle,
    UploadBytesThrottle,
    UploadThrottle,
)
from formsapi.request_body import RequestBody
from formsapi.respondent.endpoints import router as respondents_router
from formsapi.services import Services, services_of
from formsapi.spam.buffer import Refusals
from formsapi.spam.challenge import Challenges, purge_spent
from formsapi.spam.endpoints import router as refusals_router
from formsapi.submission import endpoints as submissions
from formsapi.submission.endpoints import router as submissions_router
from formsapi.submission.intake import Intake
from formsapi.submission.retention import delete_expired, purge_tombstones
from formsapi.summary import held, stored
from formsapi.summary import service as summary_service
from formsapi.summary.endpoints import router as summary_router
from formsapi.webhook import catalogue
from formsapi.webhook.endpoints import router as webhooks_router
from formsapi.webhook.retention import purge_deliveries, purge_periods
from formsapi.webhook.service import secret_box
from formsapi.webhook.worker import Worker

DESCRIPTION = """Read your organization's forms, their schemas and their submissions.

Authenticate every request with `Authorization: Bearer <API_KEY>`. Errors are
RFC 9457 problem documents (`application/problem+json`). Requests are limited per
client IP by plan (120 a minute on standard, 1,200 on pro); every response carries
`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`, and a 429 carries
`Retry-After`.
"""

log = logging.getLogger("formsapi")

SWITCH_INTERVAL = 0.0001
_DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"


async def release(app: FastAPI) -> None:
    """Close the database pool and the Redis connection: at shutdown, and in
    tests that drive the app without its lifespan. (The sign-in throttle's
    client, from `limits`, has no close.) Batches of posts being written and
    keys' last uses being recorded are let finish first."""
    made = services_of(app)
    try:
        await made.intake.close()
        made.fair_share.close()
        await made.last_use.close()
        await made.funnel.flush()  # the views and starts held, before the engine goes
        await made.refusals.flush()  # and the refused posts
        await held.HELD.stop()  # a form being read into memory
    finally:
        try:
            if made.owns_engine:
                await made.engine.dispose()
        finally:
            if made.redis is not None:
                await made.redis.close()


def _services(
    settings: Settings,
    engine: AsyncEngine,
    owns_engine: bool,
    redis: RedisPipe | None,
    auth_epoch: AuthEpoch,
) -> Services:
    sessionmaker = create_write_sessionmaker(engine)
    writes: async_sessionmaker[Any] = sessionmaker  # for those taking any session maker
    # Read endpoints answer from one statement (deep pages from two, whose
    # second only narrows what the first found): each runs in autocommit.
    read_engine = autocommit(engine)
    read_sessionmaker = create_read_sessionmaker(read_engine)
    box = secret_box(settings)
    fair_share = FairShare(WAITING_UNITS)
    return Services(
        settings=settings,
        engine=engine,
        owns_engine=owns_engine,
        sessionmaker=sessionmaker,
        read_engine=read_engine,
        read_sessionmaker=read_sessionmaker,
        redis=redis,
        secret_box=box,
        last_use=LastUse(read_sessionmaker),
        fair_share=fair_share,
        form_writes=Turns(),
        intake=Intake(sessionmaker, read_sessionmaker, box, fair_share),
        funnel=FunnelBuffer(sessionmaker, settings.funnel_flush_seconds),
        refusals=Refusals(sessionmaker, settings.funnel_flush_seconds),
        storages=Storages(settings, sessionmaker, read_sessionmaker),
        mailer=Mailer(settings.smtp_url, settings.smtp_from),
        challenges=Challenges(settings, box, writes, redis),
        auth_epoch=auth_epoch,
        principal_cache=PrincipalCache(auth_epoch),
        rate_limiter=RateLimiter(settings, redis),
        sign_in_throttle=SignInThrottle(settings, redis),
        resume_mail_throttle=ResumeMailThrottle(settings, redis),
        partial_throttle=PartialThrottle(settings, redis),
        upload_throttle=UploadThrottle(settings, redis),
        form_saves=FormSaveThrottle(settings, redis),
        upload_bytes=UploadBytesThrottle(settings, redis),
        public_post_throttle=PublicPostThrottle(settings, redis),
        password_throttle=PasswordThrottle(settings, redis),
    )


def create_app(settings: Settings | None = None, engine: AsyncEngine | None = None) -> FastAPI:
    """The service. Its database engine is its own, made from `settings`,
    unless one is given: that one is the caller's, and `release` leaves it
    open (the tests' apps share one per database)."""
    settings = settings or get_settings()
    # A thread holding the GIL gives it up after this long when another
    # waits: the loop waits no longer than this for its turn while a costly
    # form's work runs on the fair-share thread (form/work.py). Python's
    # 5 ms made each of another organization's requests wait that long at
    # every step (bench/RESULTS.md).
    sys.setswitchinterval(SWITCH_INTERVAL)
    owns_engine = engine is None
    if engine is None:
        engine = create_engine(
            settings.database_url.get_secret_value(),
            settings.database_pool_size,
            settings.database_pool_timeout,
        )
    # One Redis connection per process for limits and the auth epoch; its
    # timeout and circuit breaker also guard the sign-in throttle's client.
    redis = RedisPipe(settings.redis_url.get_secret_value()) if settings.redis_url else None
    held.HELD.capacity = settings.summary_memory_mb * 1024 * 1024
    held.HELD.store = stored.Store(_summary_directory(settings, engine))
    auth_epoch = AuthEpoch(redis, settings.redis_prefix)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Leave what startup built (models, routes, schemas: most of the heap) out
        # of garbage collection: full collections walked it all, mid-request, and
        # set the p99 (bench/RESULTS.md).
        gc.collect()
        gc.freeze()
        if not (settings.summary_warm_from and held.HELD.capacity):
            # Nothing keeps stored forms up to date: none is kept.
            await held.HELD.sweep(set(), unkept=0)
            held.HELD.store = stored.Store(None)
        background = _background(app)
        background.start()
        try:
            yield
        finally:
            await background.stop()
            await release(app)

    app = FastAPI(
        title="formsapi",
        version=__version__,
        description=DESCRIPTION,
        openapi_url="/v1/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = _services(settings, engine, owns_engine, redis, auth_epoch)
    install_handlers(app)

    app.router.routes.extend(shared_routes())
    web.install(app)
    _mount_docs(app)
    _mount_probes(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]

    app.add_middleware(CloseReadSession)
    app.add_middleware(RateLimitHeaders)
    app.add_middleware(
        RequestBody, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout
    )
    app.add_middleware(hosted.HostedPageHeaders)
    if settings.trusted_proxies:
        # Outermost, so every layer below sees the real client address.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    return app


def _summary_directory(settings: Settings, engine: AsyncEngine) -> Path | None:
    if settings.summary_dir is not None:
        return Path(settings.summary_dir) if settings.summary_dir else None
    database = database_file(engine)
    return None if database is None else Path(f"{database}.summaries")


def _background(app: FastAPI) -> Background:
    """What this process runs beside serving: retention sweeps, forms'
    schedules, the funnel's and refusals' counts, warming summaries, and
    (see _deliveries) webhooks and mail."""
    made = services_of(app)
    settings = made.settings
    # The sweeps and workers take any session maker; theirs write.
    sessionmaker: async_sessionmaker[Any] = made.sessionmaker
    background = Background()
    sweeps = {
        "expired submissions": partial(delete_expired, sessionmaker),
        "tombstones": partial(purge_tombstones, sessionmaker, settings.tombstone_days),
        "partial responses": partial(purge_partials, sessionmaker),
        "events": partial(purge_events, sessionmaker, settings.event_days),
        "webhook deliveries": partial(purge_deliveries, sessionmaker, settings.event_days),
        "webhook subscriptions": partial(purge_periods, sessionmaker, settings.event_days),
        "mails": partial(purge_mails, sessionmaker, settings.event_days),
        "counts of copies": partial(purge_copy_counts, sessionmaker),
        "spent challenges": partial(purge_spent, sessionmaker),
        "started stamps": partial(funnel_service.purge_started, sessionmaker),
        "respondents' lapsed addresses": partial(purge_lapsed, sessionmaker),
    }
    background.add_endless("retention sweeps", partial(keep_sweeping, sweeps))
    # Files of deleted submissions, and uploads no submission took: often,
    # since bytes in an object store wait for this to go.
    files = {"files": partial(file_service.purge, sessionmaker, made.storages)}
    background.add_endless("file sweeps", partial(keep_sweeping, files, every=60.0))
    # Forms due to open or close (form/limits.py): posts and pages judge by
    # the time meanwhile, so this only makes status and events follow soon.
    schedules = {"form schedules": partial(form_service.settle_due, sessionmaker)}
    background.add_endless("form schedules", partial(keep_sweeping, schedules, every=30.0))
    background.add_endless("funnel counts", made.funnel.run)
    background.add_endless("refusal counts", made.refusals.run)
    if settings.summary_warm_from and held.HELD.capacity:
        # The largest forms' filtered summaries counted from memory from their first ask.
        warming = partial(
            summary_service.keep_warm, made.read_sessionmaker, settings.summary_warm_from
        )
        background.add_endless("warming summaries", warming)
    _deliveries(made, sessionmaker, background)
    return background


def _deliveries(
    made: Services, sessionmaker: async_sessionmaker[Any], background: Background
) -> None:
    """Deliver webhooks and send mail from this process too: with
    FORMSAPI_WEBHOOK_WORKER on, or auto on SQLite (one serving process, no
    other to run it)."""
    settings = made.settings
    wanted = settings.webhook_worker == "on" or (
        settings.webhook_worker == "auto" and made.engine.dialect.name == "sqlite"
    )
    if not wanted:
        return
    if made.secret_box is None:
        log.warning("webhooks are not delivered: set FORMSAPI_SECRET_KEY")
        if not made.mailer.enabled:
            return
    copies = CopyRules.of(settings, made.secret_box)
    sender = Sender(sessionmaker, made.mailer, settings.public_url, copies)
    worker = Worker(
        sessionmaker,
        settings,
        made.secret_box,
        woken=True,
        fan_out=fan_out(sender) if made.mailer.enabled else None,
    )

    async def deliver(stop: asyncio.Event) -> None:
        stop_waking = event_service.when_committed(worker.wake.set)
        try:
            await worker.run(stop, settings.shutdown_grace)
        finally:
            stop_waking()

    background.add("webhook deliveries", deliver)
    if made.mailer.enabled:
        background.add("mail", partial(sender.run, grace=settings.shutdown_grace))


_UNAVAILABLE = {
    "description": "The database is busy or cannot be reached; see `Retry-After`.",
    "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


_API_ROUTERS = (
    forms_router,
    submissions_router,
    summary_router,
    refusals_router,
    partials_router,
    invitations_router,
    files_router,
    events_router,
    webhooks_router,
    respondents_router,
    links_router,
)


@cache
def shared_routes() -> list[BaseRoute]:
    """The API's, the hosted pages' and the settings area's routes. They hold no
    state of an app's (endpoints reach it through the request), so every app
    of the process shares them.

    One flat list, each router's routes in turn (each router carries its whole
    prefix), rather than routers included in routers: FastAPI (0.137 on) keeps
    an included router as a node that each request walks twice, which cost a
    settings page's request more than its own handler did (bench/RESULTS.md)."""
    api = [route for router in _API_ROUTERS for route in router.routes]
    return [submissions.SUBMIT, *api, *hosted.routes(), *web.routes()]


async def _delivery(
    webhook_id: Annotated[
        str,
        Header(
            description="The event's id, the same on every attempt and resend: deliveries "
            "come at least once, so drop the ones you have seen."
        ),
    ],
    webhook_timestamp: Annotated[
        str,
        Header(
            description="When this attempt was signed, in Unix seconds: refuse one far from "
            "now (`verify_webhook` allows 5 minutes)."
        ),
    ],
    webhook_signature: Annotated[
        str,
        Header(
            description="`v1,` and the base64 HMAC-SHA256, under the endpoint's secret, of "
            "`{webhook-id}.{webhook-timestamp}.{body}`; one per live secret, space-separated, "
            "while a rotation overlaps. Verify before reading the body."
        ),
    ],
) -> None:
    """Never called: a receiver's side of a delivery, declared for the document."""


# What a receiver's answer does to a delivery (webhook/delivery.py).
_RECEIVER_ANSWERS: dict[str, dict[str, Any]] = {
    "2XX": {"description": "Delivered. Answer within 15 seconds: queue slow work."},
    "410": {
        "description": "Gone: the endpoint is disabled at once, as it is by a "
        "`webhook-delivery: disable` header on any answer."
    },
    "default": {
        "description": "Tried again on the schedule, for about three days (a 429 or no "
        "answer in time waits longer; `Retry-After` is honoured), unless the answer carries "
        "`webhook-delivery: abort-message`. Redirects are not followed."
    },
}


@cache
def _webhook_routes() -> list[BaseRoute]:
    """One declaration per event type (webhook/catalogue.py). Its payload is
    declared as the operation's response, and moved to its request body by
    _openapi: FastAPI documents a request body as input, which would split
    the API's FormDetail into an -Input and an -Output twin, and a delivery
    is output, like the API's responses, whose schemas it shares."""
    router = APIRouter(tags=["Webhooks"])
    for type_, payload in catalogue.PAYLOADS.items():
        router.add_api_route(
            type_.value,
            _delivery,
            methods=["POST"],
            response_model=payload,
            summary=type_.value,
            description=inspect.cleandoc(payload.__doc__ or ""),
            operation_id=f"webhook_{type_.name}",
        )
    return list(router.routes)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, less its automatic 422 (bad parameters answer 400
    here, declared by each endpoint), with errors typed as problem+json, and
    a `webhooks` entry per event type."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            webhooks=_webhook_routes(),
        )
        for item in schema["webhooks"].values():
            for operation in item.values():
                payload = operation["responses"]["200"]["content"]
                operation["requestBody"] = {"required": True, "content": payload}
                operation["responses"] = copy.deepcopy(_RECEIVER_ANSWERS)
        for path in schema["paths"].values():
            for operation in path.values():
                responses = operation.get("responses", {})
                if "HTTPValidationError" in str(responses.get("422", "")):
                    del responses["422"]  # FastAPI's own; ours are problem documents
                for status, response in responses.items():
                    content = response.get("content", {})
                    if int(status) >= 400 and "application/json" in content:
                        response["content"] = {PROBLEM_JSON: content["application/json"]}
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        # Declared here rather than by a per-request security dependency: the
        # header is parsed once, by the principal dependency, on the hot path.
        schema["components"]["securitySchemes"] = {
            "HTTPBearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key: `fapi_...`",
            }
        }
        for path_name, path in schema["paths"].items():
            if path_name.startswith("/v1/"):
                for operation in path.values():
                    operation.setdefault("security", [{"HTTPBearer": []}])
                    # Any operation may find the database busy or away.
                    operation["responses"].setdefault("503", _UNAVAILABLE)
        app.openapi_schema = schema
    return app.openapi_schema


def _mount_docs(app: FastAPI) -> None:
    # Swagger UI from files we serve, so the docs work with no internet access.
    app.mount("/v1/docs/static", StaticFiles(directory=_DOCS_ASSETS), name="docs-static")

    @app.get("/v1/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/v1/openapi.json",
            title="formsapi: API reference",
            swagger_js_url="/v1/docs/static/swagger-ui-bundle.js",
            swagger_css_url="/v1/docs/static/swagger-ui.css",
            swagger_favicon_url="/v1/docs/static/favicon.png",
        )


def _mount_probes(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        """503 when the database is unreachable. Redis being down degrades the
        service (per-process limits, no key cache) but does not stop it, so it
        is reported without failing readiness: every instance shares it, and
        failing them all would turn a degradation into an outage."""
        redis = await services_of(app).auth_epoch.ping()
        components = {"redis": {None: "not configured", True: "ok", False: "unreachable"}[redis]}
        pool = services_of(app).engine.pool
        if isinstance(pool, QueuePool) and pool.checkedout() >= pool.size():
            # Every connection is in use by requests: the database answers and
            # the process serves. Waiting for one would fail the probe under load
            # and take every busy instance out of rotation at once.
            return JSONResponse(
                {"status": "ready", "components": {"database": "busy", **components}}
            )
        try:
            # Autocommit: a probe must not queue for SQLite's write lock.
            async with services_of(app).read_engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as error:  # any failure means "not ready", never a crash
            return problem_response(
                NotReady.status,
                NotReady.title,
                f"The database is not reachable: {type(error).__name__}.",
                slug=NotReady.slug,
                components={"database": "unreachable", **components},
            )
        return JSONResponse({"status": "ready", "components": {"database": "ok", **components}})
