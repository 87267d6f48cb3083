"""The page behind each problem type URI (`/problems/{slug}`): what the
problem means and what to do, for the person reading a `type` they got."""

import inspect
from http import HTTPStatus

from fastapi import APIRouter, Request
from fastapi.responses import Response

from formsapi.errors import registry
from formsapi.web.context import render
from formsapi.web.pages import PageRoute

router = APIRouter(prefix="/problems", route_class=PageRoute, include_in_schema=False)
_STATUSES = frozenset(status.value for status in HTTPStatus)


@router.get("/{slug}")
async def problem(request: Request, slug: str) -> Response:
    kind = registry().get(slug)
    if kind is not None:
        status, title, about = kind.status, kind.title, inspect.cleandoc(kind.__doc__ or "")
    elif slug.startswith("http-") and slug[5:].isdigit() and int(slug[5:]) in _STATUSES:
        status = int(slug[5:])  # an HTTP error the framework answered itself
        title, about = HTTPStatus(status).phrase, HTTPStatus(status).description + "."
    else:
        return render(
            request,
            "pages/message.html",
            None,
            404,
            heading="Unknown problem type",
            message=f"formsapi has no problem type called “{slug[:100]}”.",
        )
    return render(
        request,
        "problems/problem.html",
        None,
        200,
        slug=slug,
        http_status=status,
        problem_title=title,
        paragraphs=[" ".join(part.split()) for part in about.split("\n\n")],
    )
