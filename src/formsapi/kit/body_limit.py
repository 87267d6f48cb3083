"""413, as a problem document, for request bodies over the limit: refused up
front when their Content-Length says so, stopped mid-read when a chunked body
runs over (the reader gets an HTTP 413 error, which the problem handler renders)."""

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from formsapi.errors import PayloadTooLarge, problem_response


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
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
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(
                        413, f"The body is over the {self.max_bytes} bytes accepted."
                    )
            return message

        await self.app(scope, counted, send)
