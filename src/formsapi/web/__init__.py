"""The settings area: a server-rendered web UI for people (the API is for programs)."""

import logging
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute, Mount

from formsapi.kit.redact import redact_url
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

_MODULES = (
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
)


class RedactLinkTokens(logging.Filter):
    """The secrets links carry (kit/redact.py) stay out of the access log,
    which quotes each request's path and query."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_url(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def routes() -> list[BaseRoute]:
    """The pages' routes, each router's in turn, and their static files."""
    static = StaticFiles(directory=Path(__file__).parent / "static")
    return [
        *(route for module in _MODULES for route in module.router.routes),
        Mount("/static", static, name="web-static"),
    ]


def install(app: FastAPI) -> None:
    """What each app of the settings area needs besides its routes."""
    access_log = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactLinkTokens) for f in access_log.filters):
        access_log.addFilter(RedactLinkTokens())

    pages.install(app)
