"""Outbound HTTP to URLs users give us (webhooks), kept off our own networks.

A URL is checked twice: when it is registered (check_url, check_destination),
and again by the transport on the very address each connection goes to,
since a name can resolve elsewhere by the time we connect (DNS rebinding).
The transport resolves the name itself and connects to a vetted IP literal,
while httpcore still hands the URL's host to TLS as server_hostname: SNI and
certificate checks are on the real name.

Why a network backend and not httpx's own transport: AsyncHTTPTransport takes
no network backend, so this builds the httpcore pool it would have built (no
proxies, whatever the environment says) and maps requests, responses and
errors the way httpx/_transports/default.py does, on public names only.
"""

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import contextmanager

import httpcore
import httpx

MAX_URL_LENGTH = 2048

# Not caught by ipaddress's flags on Python 3.11: the IETF protocol block
# holds Oracle Cloud's metadata service (192.0.0.192).
_ALSO_BLOCKED = (
    ipaddress.ip_network("192.0.0.0/24"),
    ipaddress.ip_network("fec0::/10"),  # site-local: deprecated, still routed inside some networks
)
# Lookups run in threads; a name whose DNS never answers must not tie up
# more than a few, nor keep a request waiting long.
RESOLVE_TIMEOUT = 5.0
_LOOKUPS = asyncio.Semaphore(8)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefused(Exception):
    """Its message is safe to show the user: it names the host and why, never credentials."""


def check_url(url: str, *, allow_private: bool) -> str:
    """Syntax only, no DNS: the URL normalized, or EgressRefused. IP-literal
    hosts, including the short forms getaddrinfo accepts (127.1, 2130706433),
    are judged here already."""
    if len(url) > MAX_URL_LENGTH:
        raise EgressRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise EgressRefused("not a valid URL") from None  # its message may quote the URL
    normalized = str(parsed)
    if parsed.scheme != "https" and not (allow_private and parsed.scheme == "http"):
        raise EgressRefused("the URL must start with https://")
    if not parsed.host:
        raise EgressRefused("the URL has no host")
    if parsed.userinfo:
        raise EgressRefused(f"the URL for {parsed.host} must not carry a user name or password")
    if "#" in normalized:  # once normalized, a "#" can only start a fragment
        raise EgressRefused(f"the URL for {parsed.host} must not have a #fragment")
    if len(normalized) > MAX_URL_LENGTH:
        raise EgressRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    address = _ip_literal(parsed.host)
    if address is not None and not allow_private and not is_public(address):
        raise EgressRefused(f"{parsed.host} is not a public address")
    return normalized


def is_public(address: str) -> bool:
    """True for a globally routable unicast address. An IPv6 address that
    carries an IPv4 one (mapped, compatible, 6to4, NAT64) is judged by it."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
        elif int(ip) >> 32 == 0 or ip in _NAT64:  # IPv4-compatible (::a.b.c.d) or NAT64
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    # is_global alone lets multicast through, and on 3.11 the reserved ::/8.
    return (
        ip.is_global
        and not (ip.is_multicast or ip.is_reserved)
        and not any(ip in net for net in _ALSO_BLOCKED)
    )


async def check_destination(url: str, *, allow_private: bool) -> None:
    """check_url, then every address the host resolves to must be public."""
    parsed = httpx.URL(check_url(url, allow_private=allow_private))
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = parsed.raw_host.decode("ascii")
    try:
        addresses = await _resolve(host, port)
    except socket.gaierror:
        raise EgressRefused(f"{host} does not resolve") from None
    _vet(host, addresses, allow_private=allow_private)


def transport(
    *, allow_private: bool, max_connections: int = 100, keepalive_expiry: float = 5.0
) -> httpx.AsyncBaseTransport:
    """For httpx.AsyncClient(transport=...). A host that resolves to any
    address that is not public raises EgressRefused itself, not an httpx
    error, so a caller tells a refusal from a network failure; a host that
    does not resolve is a network failure (httpx.ConnectError)."""
    return _Transport(
        httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            network_backend=_Backend(allow_private=allow_private),
        )
    )


def _ip_literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:  # 127.1, 0x7f.1, 2130706433: getaddrinfo reads them as IPv4 addresses
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None


async def _resolve(host: str, port: int) -> list[str]:
    if _ip_literal(host) is not None:
        return [str(_ip_literal(host))]
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT), _LOOKUPS:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
    except TimeoutError:
        raise socket.gaierror(f"{host}: no DNS answer in {RESOLVE_TIMEOUT:g} s") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _vet(host: str, addresses: list[str], *, allow_private: bool) -> None:
    # Every address, since the connection may go to any of them. Which one
    # failed stays unsaid: the user would learn what our internal names are.
    if not allow_private and not all(is_public(address) for address in addresses):
        raise EgressRefused(f"{host} resolves to an address that is not public")


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        # One deadline for resolving and every address tried, as anyio's own connect has.
        try:
            async with asyncio.timeout(timeout):
                try:
                    addresses = await _resolve(host, port)
                except socket.gaierror:
                    raise httpcore.ConnectError(f"{host} does not resolve") from None
                _vet(host, addresses, allow_private=self._allow_private)
                failure = httpcore.ConnectError(f"{host} did not answer")
                for address in addresses:
                    try:
                        return await self._inner.connect_tcp(
                            address, port, timeout, local_address, socket_options
                        )
                    except httpcore.ConnectError as exc:
                        failure = exc
                raise failure
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"connecting to {host} timed out") from None

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise EgressRefused("Unix sockets are not an allowed destination")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    getattr(httpcore, name): getattr(httpx, name)
    for name in (
        "TimeoutException",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "NetworkError",
        "ConnectError",
        "ReadError",
        "WriteError",
        "ProxyError",
        "UnsupportedProtocol",
        "ProtocolError",
        "LocalProtocolError",
        "RemoteProtocolError",
    )
}


@contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's errors as httpx's of the same name; anything else as it is."""
    try:
        yield
    except Exception as exc:
        # The first match in the MRO is the most specific one.
        mapped = next((_ERRORS[c] for c in type(exc).__mro__ if c in _ERRORS), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)  # httpcore's streams have it
        if aclose is not None:
            await aclose()


class _Transport(httpx.AsyncBaseTransport):
    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
