"""Every request body bounded in size and in time, for whoever reads it.

413 (a problem document) for a body over the limit: refused up front when its
Content-Length says so, stopped mid-read when a chunked body runs over. 408
when the body has not fully arrived within `timeout` seconds of the request's
start: a client that sends its headers and part of a body, then waits, holds
only its own socket. Readers get an HTTP error, which the problem handler
renders; once the body is complete, receiving passes through untouched (a
streaming response waits on it for the client's disconnect).
"""

import asyncio
import re
from collections.abc import AsyncIterator

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from formsapi.errors import PayloadTooLarge, RequestTimeout
from formsapi.problems import problem_response

# Uploads: bounded by their own route (`streamed`), by the question's size
# and a pace rather than one deadline, since a large file takes minutes.
UPLOADS = re.compile(r"/(?:v1/forms|f)/[^/]+/files")


class RequestBody:
    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            scope["method"] == "POST" and UPLOADS.fullmatch(scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                response = problem_response(
                    413,
                    PayloadTooLarge.title,
                    f"The body is {int(value)} bytes; at most {self.max_bytes} are accepted.",
                    slug=PayloadTooLarge.slug,
                    instance=scope.get("path"),
                )
                await response(scope, receive, send)
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        received = 0
        complete = False

        async def bounded() -> Message:
            nonlocal received, complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise HTTPException(
                    408, f"The request body did not arrive within {self.timeout:g} s."
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(
                        413, f"The body is over the {self.max_bytes} bytes accepted."
                    )
                complete = not message.get("more_body", False)
            else:  # the client went away
                complete = True
            return message

        await self.app(scope, bounded, send)


async def streamed(request: Request, idle: float, min_rate: int) -> AsyncIterator[bytes]:
    """An upload's body as it arrives, never more than one piece of it held:
    408 when nothing arrives for `idle` seconds, or when, past the first
    `idle` seconds, it has averaged under `min_rate` bytes a second."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    received = 0
    pieces = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle):
                piece = await anext(pieces)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise RequestTimeout(f"Nothing of the upload arrived for {idle:g} s.") from None
        received += len(piece)
        elapsed = loop.time() - start
        if elapsed > idle and received < min_rate * (elapsed - idle):
            raise RequestTimeout(f"The upload is arriving slower than {min_rate} bytes a second.")
        if piece:
            yield piece
