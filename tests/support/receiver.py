"""A real webhook receiver for tests: an HTTP server on loopback, in the
test's event loop, that records every request and answers as it is told."""

import asyncio
import contextlib
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic()


# What to answer a request: (status, headers, body).
Answer = tuple[int, dict[str, str], bytes]
Behaviour = Callable[[Received], Awaitable[Answer]]


async def accept(_: Received) -> Answer:
    return 200, {}, b"ok"


@dataclass
class Receiver:
    behaviour: Behaviour = accept
    received: list[Received] = field(default_factory=list)
    url: str = ""
    _server: uvicorn.Server | None = None
    _task: "asyncio.Task[None] | None" = None

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        request = Received(headers, body, time.monotonic())
        self.received.append(request)
        status, answer_headers, answer = await self.behaviour(request)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in answer_headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": answer})

    async def __aenter__(self) -> "Receiver":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/hook"
        config = uvicorn.Config(
            self._app, interface="asgi3", log_level="warning", lifespan="off", access_log=False
        )
        self._server = uvicorn.Server(config)
        # The test runner's signal handlers stay as they are.
        self._server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:  # noqa: ASYNC110 - uvicorn offers no event
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None
        assert self._task is not None
        self._server.should_exit = True
        self._server.force_exit = True
        await self._task
