"""One Redis connection per process that every request shares, the commands
of the callers of one turn of the event loop written together.

Redis answers a connection's commands in the order they were sent, so a caller
writes its commands, queues a future for their replies and awaits it: no
connection pool to wait on, no lock, and replies for several callers often
arrive in one read. hiredis (the C library redis-py itself parses with) packs
the commands and parses the replies; this module only keeps the order.

Why not redis-py's client: its asyncio pipeline spent 5-7 times the CPU on
the rate limiter's three commands (`python -m bench.redis_exchange`;
bench/RESULTS.md), and that exchange runs on every API request.

Every call has one timeout, and goes through the process's Redis circuit
breaker (kit/breaker.py): once a call fails for want of Redis (refused, reset,
a refused AUTH, or no reply within the timeout, as from a frozen server),
calls fail at once with no I/O until a cool-down has passed and one call has
found Redis answering again.
"""

import asyncio
import ssl
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import hiredis
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection, parse_url
from redis.exceptions import NoScriptError, ResponseError

from formsapi.kit.breaker import CircuitBreaker, Open

Command = tuple[str | bytes | int | float, ...]  # a command and its arguments


@dataclass(frozen=True, slots=True)
class _Address:
    host: str = "localhost"
    port: int = 6379
    path: str | None = None  # a Unix socket
    tls: ssl.SSLContext | None = None
    # AUTH (a password: kept out of the repr), SELECT, CLIENT SETNAME: sent first on each connection
    setup: tuple[Command, ...] = field(default=(), repr=False)
    timeout: float | None = None  # the URL's socket_timeout
    connect_timeout: float | None = None  # the URL's socket_connect_timeout


# Tuning for redis-py's pools, which one long-lived connection has no use for.
_POOL_OPTIONS = ("max_connections", "health_check_interval", "retry_on_timeout", "socket_keepalive")


def _address(url: str) -> _Address:
    options: dict[str, Any] = dict(parse_url(url))
    connection_class = options.pop("connection_class", None)
    tls = None
    if connection_class is SSLConnection:
        tls = ssl.create_default_context(cafile=options.pop("ssl_ca_certs", None))
        if str(options.pop("ssl_cert_reqs", "required")).lower() in ("none", "0"):
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
    setup: list[Command] = []
    username, password = options.pop("username", None), options.pop("password", None)
    if password is not None:
        setup.append(("AUTH", username, password) if username else ("AUTH", password))
    client_name = options.pop("client_name", None)
    if client_name:
        setup.append(("CLIENT", "SETNAME", client_name))
    db = int(options.pop("db", 0) or 0)
    if db:
        setup.append(("SELECT", db))
    path = options.pop("path", None) if connection_class is UnixDomainSocketConnection else None
    address = _Address(
        host=options.pop("host", "localhost"),
        port=int(options.pop("port", 6379)),
        path=path,
        tls=tls,
        setup=tuple(setup),
        timeout=options.pop("socket_timeout", None),
        connect_timeout=options.pop("socket_connect_timeout", None),
    )
    for ignored in _POOL_OPTIONS:
        options.pop(ignored, None)
    if options:
        raise ValueError(f"Redis URL options not supported here: {', '.join(sorted(options))}")
    return address


class _Unreachable(Exception):
    """No connection: refused, unreachable, or AUTH, SELECT or CLIENT SETNAME
    refused. No use trying again at once."""

    def __init__(self, cause: Exception) -> None:
        self.cause = cause


class _Link(asyncio.Protocol):
    """One connection: callers' replies in the order their commands went out."""

    def __init__(self) -> None:
        self._reader = hiredis.Reader(replyError=ResponseError)
        # (replies expected, replies so far, the caller's future), oldest first
        self._waiting: deque[tuple[int, list[Any], asyncio.Future[list[Any]]]] = deque()
        self._transport: asyncio.Transport | None = None
        self._outgoing: list[bytes] = []  # packed, for the next write
        self.closed = False
        self.lost = asyncio.get_running_loop().create_future()  # done once the socket is closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._reader.feed(data)
        try:
            while (reply := self._reader.gets()) is not False:
                count, replies, waiter = self._waiting[0]
                replies.append(reply)
                if len(replies) == count:
                    self._waiting.popleft()
                    if not waiter.done():  # a caller that timed out has gone
                        waiter.set_result(replies)
        except (hiredis.ProtocolError, IndexError):
            # Garbled or unasked-for replies: nothing after them can be matched.
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost.set_result(None)
        while self._waiting:
            waiter = self._waiting.popleft()[2]
            if not waiter.done():
                waiter.set_exception(ConnectionError(f"Redis connection lost: {exc or 'closed'}"))

    def send(self, commands: tuple[Command, ...]) -> asyncio.Future[list[Any]]:
        assert self._transport is not None
        # Packed before queueing: a command that cannot be packed must not leave
        # an entry with no replies coming, which would shift every later caller's.
        # cast: hiredis's stub types the argument as a one-item tuple
        packed = b"".join(hiredis.pack_command(cast(Any, command)) for command in commands)
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiting.append((len(commands), [], waiter))
        # The callers of one turn of the event loop go out in one write: a
        # system call per request had cost more than the rest of the exchange.
        if not self._outgoing:
            loop.call_soon(self._flush)
        self._outgoing.append(packed)
        return waiter

    def _flush(self) -> None:
        if self._transport is not None and not self.closed:
            self._transport.write(b"".join(self._outgoing))
        self._outgoing.clear()

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()


class RedisPipe:
    """Run commands on the process's shared connection, opened on first use
    and again after it is lost. Fails fast (ConnectionError, TimeoutError, or
    Redis's own error reply as redis-py's ResponseError) so a caller can fall
    back; a connection that let a reply time out is closed and replaced."""

    def __init__(
        self, url: str, timeout: float = 1.0, breaker: CircuitBreaker | None = None
    ) -> None:
        self._address = _address(url)
        self.timeout = self._address.timeout or timeout
        self._connect_timeout = self._address.connect_timeout or self.timeout
        self.breaker = breaker or CircuitBreaker("Redis")
        self._link: _Link | None = None
        self._connecting = asyncio.Lock()

    async def execute(self, *commands: Command) -> list[Any]:
        """Each command's reply, in order. Raises breaker.Open at once while the
        breaker is open, ConnectionError or TimeoutError when this call finds
        Redis gone, and Redis's own error replies as ResponseError."""
        if not commands:
            return []
        probe = self.breaker.admit()
        try:
            link = self._link
            if link is None or link.closed:
                link = await self._connect(probe)
            replies = await self._exchange(link, commands)
        except (TimeoutError, _Unreachable) as error:
            # No answer, or no connection to be had: Redis is down or frozen.
            if self._link is not None:
                self._link.close()  # a late reply must not land on a later caller
            self.breaker.failed(probe)
            if isinstance(error, _Unreachable):
                raise error.cause from None
            raise
        except BaseException:
            # Cancelled, or the connection dropped under this call (a Redis
            # restart, CLIENT KILL): the next call connects anew, and trips the
            # breaker if it cannot.
            if probe:
                self.breaker.done()
            raise
        self.breaker.succeeded()
        for reply in replies:
            if isinstance(reply, ResponseError):
                raise NoScriptError(*reply.args) if str(reply).startswith("NOSCRIPT") else reply
        return replies

    async def _exchange(self, link: _Link, commands: tuple[Command, ...]) -> list[Any]:
        waiter = link.send(commands)
        async with asyncio.timeout(self.timeout):
            return await waiter

    async def _connect(self, probe: bool) -> _Link:
        async with self._connecting:
            if self._link is not None and not self._link.closed:
                return self._link  # another caller connected while this one waited
            if not (self.breaker.closed or probe):
                # Another caller's attempt failed while this one waited its turn.
                raise Open("Redis failed a moment ago")
            link = None
            try:
                async with asyncio.timeout(self._connect_timeout):
                    link = await self._open()
                    if self._address.setup:
                        for reply in await self._exchange(link, self._address.setup):
                            if isinstance(reply, ResponseError):
                                raise _Unreachable(reply)
            except BaseException as error:
                # Half set up (refused AUTH, a timeout, the caller cancelled): close it.
                if link is not None:
                    link.close()
                if isinstance(error, OSError):
                    raise _Unreachable(error) from None
                raise
            self._link = link
            return link

    async def _open(self) -> _Link:
        loop = asyncio.get_running_loop()
        address = self._address
        if address.path is not None:
            _, link = await loop.create_unix_connection(_Link, address.path)
        else:
            _, link = await loop.create_connection(
                _Link, address.host, address.port, ssl=address.tls
            )
        return link

    async def close(self) -> None:
        if self._link is not None:
            self._link.close()
            await self._link.lost
            self._link = None
