"""The /v1 API's HTTP kit: what every `endpoints.py` reads requests and
answers with. Path ids, paging, timestamps, JSON responses, the problem
sets a route declares, and idempotent writes. The caller, its session and
its checks before the body are dependencies.py's.

It imports the kit, errors and the idempotency store, never a domain's
endpoints: an endpoints module imports this, and no other package's
endpoints (tests/test_layout.py).
"""

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import Depends, Path, Request
from fastapi.responses import Response
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import problem_responses
from formsapi.idempotency.service import Outcome, fingerprint, run_once
from formsapi.kit.ids import ID_PATTERN
from formsapi.kit.pagination import PageParams, page_params
from formsapi.kit.time import parse_timestamp

FormId = Annotated[
    str, Path(alias="formId", pattern=ID_PATTERN, max_length=64, description="A form id.")
]
PageDep = Annotated[PageParams, Depends(page_params)]


def _timestamp(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    try:
        return parse_timestamp(str(value))
    except ValueError as error:
        raise PydanticCustomError("timestamp", str(error)) from None


# An ISO 8601 query parameter, as the API reads timestamps everywhere.
Timestamp = BeforeValidator(_timestamp)

ERRORS = problem_responses(400, 401, 403, 429)
ERRORS_404 = problem_responses(400, 401, 403, 404, 429)
ERRORS_WRITE = problem_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 429)


def json(body: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    # orjson straight to bytes: the list endpoints skip generic serialization.
    return Response(
        orjson.dumps(body), status_code=status, headers=headers, media_type="application/json"
    )


def replay(outcome: Outcome) -> Response:
    """A write's outcome as its response, the first time or replayed."""
    headers = {"Location": outcome.location} if outcome.location else None
    return Response(
        outcome.body, status_code=outcome.status, headers=headers, media_type="application/json"
    )


async def idempotent(
    session: AsyncSession,
    organization_id: str,
    key: str | None,
    request: Request,
    sent: dict[str, Any],
    work: Callable[[], Awaitable[Outcome]],
) -> Outcome:
    """`work` done once for an Idempotency-Key (idempotency/): a retry with
    the same key and request gets the first outcome, another request with
    it a 422. `sent`: what identifies the request beyond its method and path."""
    made = fingerprint(request.method, request.url.path, sent)
    return await run_once(session, organization_id, key, made, work)
