"""A TCP proxy on loopback in front of a real server, for what a network does
to a client: lose the answer to a request the server did act on, or cut an
answer short, or answer in its place as a misconfigured proxy or captive
portal does. Each connection it accepts takes the next plan in `plans`
(then passes everything through)."""

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

# "lose": the request goes through; the connection is closed as its answer
# starts, so the server acted and the client never hears of it.
# ("cut", n): the answer's headers and n bytes of its body, then the close.
# Answer(...): see below.
Cut = tuple[Literal["cut"], int]


@dataclass(frozen=True)
class Answer:
    """An answer made by the proxy itself, as a captive portal's page or a load
    balancer's 502 or 503 would be: the server never hears of the request."""

    content_type: str
    body: bytes
    status: str = "200 OK"
    headers: tuple[str, ...] = ()  # "Name: value" lines


def busy(status: str, *headers: str) -> Answer:
    """A load balancer's answer in the service's place ("503 Service Unavailable")."""
    return Answer("text/html", b"<html>busy</html>", status, headers)


Plan = Literal["lose"] | Cut | Answer


def _read_request(sock: socket.socket) -> None:
    """Read a request to its end, as a load balancer does before it answers
    (an answer while the client still sends would reset the connection):
    its head, then its Content-Length's bytes or its chunks to the last."""
    sock.settimeout(10)
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data and (more := sock.recv(65536)):
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
        fields = {name.strip().lower(): value.strip() for name, value in fields.items()}
        length = int(fields.get(b"content-length", b"0"))
        chunked = fields.get(b"transfer-encoding", b"").lower() == b"chunked"
        left = length - len(body)
        while (left > 0 or (chunked and not body.endswith(b"0\r\n\r\n"))) and (
            more := sock.recv(65536)
        ):
            left -= len(more)
            body = body[-8:] + more


@dataclass
class Proxy:
    upstream: str
    plans: list[Plan] = field(default_factory=list)
    connections: int = 0
    url: str = ""
    _listener: socket.socket | None = None

    def _pump_answer(
        self, source: socket.socket, sink: socket.socket, plan: Literal["lose"] | Cut | None
    ) -> None:
        head = b""  # the answer so far, until its headers are complete
        body_left: int | None = None  # ("cut", n): body bytes still to pass on
        while data := source.recv(65536):
            if plan == "lose":
                return
            if plan is None:
                sink.sendall(data)
            elif body_left is None:
                head += data
                end = head.find(b"\r\n\r\n")
                if end < 0:
                    sink.sendall(data)
                    continue
                in_head = len(head) - end - 4
                sink.sendall(data[: len(data) - max(0, in_head - plan[1])])
                body_left = plan[1] - in_head
            else:
                sink.sendall(data[:body_left])
                body_left -= len(data)
            if body_left is not None and body_left <= 0:
                return

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)

    def _serve(self, downstream: socket.socket, plan: Plan | None) -> None:
        if isinstance(plan, Answer):
            with downstream:
                _read_request(downstream)
                head = f"HTTP/1.1 {plan.status}\r\nContent-Type: {plan.content_type}\r\n"
                head += "".join(f"{line}\r\n" for line in plan.headers)
                head += f"Content-Length: {len(plan.body)}\r\nConnection: close\r\n\r\n"
                downstream.sendall(head.encode() + plan.body)
            return
        parts = urlsplit(self.upstream)
        upstream = socket.create_connection((parts.hostname, parts.port))
        threading.Thread(target=self._pump, args=(downstream, upstream), daemon=True).start()
        try:
            with contextlib.suppress(OSError):
                self._pump_answer(upstream, downstream, plan)
        finally:
            for end in (downstream, upstream):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def _accept(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(OSError):
            while True:
                downstream, _ = self._listener.accept()
                self.connections += 1
                plan = self.plans.pop(0) if self.plans else None
                threading.Thread(target=self._serve, args=(downstream, plan), daemon=True).start()

    @contextlib.contextmanager
    def running(self) -> Iterator["Proxy"]:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()
        try:
            yield self
        finally:
            self._listener.close()
