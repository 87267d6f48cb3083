"""The settings area: a server-rendered web UI for people (the API is for programs)."""

import logging
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from formsapi.kit.redact import redact_link_tokens
from formsapi.web import (
    account,
    builder,
    embed,
    forms,
    invitations,
    keys,
    members,
    notifications,
    organization,
    pages,
    problems,
    report,
    respondents,
    summary,
    webhooks,
)

router = APIRouter(include_in_schema=False)
for module in (
    account,
    builder,
    embed,
    forms,
    invitations,
    keys,
    members,
    notifications,
    organization,
    problems,
    report,
    respondents,
    summary,
    webhooks,
):
    router.include_router(module.router)


class RedactLinkTokens(logging.Filter):
    """Invitation and password reset links are secrets: keep them out of the access log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_link_tokens(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def install_routes(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="web-static")


def install(app: FastAPI) -> None:
    """What each app of the settings area needs besides its routes."""
    access_log = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactLinkTokens) for f in access_log.filters):
        access_log.addFilter(RedactLinkTokens())

    pages.install(app)
