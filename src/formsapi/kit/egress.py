"""Outbound HTTP to URLs users give us (webhooks), kept off our own networks.

A URL is checked twice: when it is registered (check_url, check_destination),
and again at every request (Client.post), on the very addresses the
connection goes to, since a name can resolve elsewhere by the time we
connect (DNS rebinding). aiohttp's connector asks our resolver for the
addresses, connects to one of them, and hands the URL's host to TLS as
server_hostname: SNI and certificate checks stay on the real name.

Why aiohttp and not httpx, the stack's HTTP client: a worker sends thousands
of requests a second, and httpx (over httpcore and anyio) cost 1.56 ms of CPU
a request where aiohttp cost 0.19 ms, measured side by side (bench/RESULTS.md).
"""

import asyncio
import ipaddress
import socket
import ssl
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

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
        parsed = URL(url)
        normalized = str(parsed)
    except (ValueError, TypeError, UnicodeError):
        raise EgressRefused("not a valid URL") from None  # its message may quote the URL
    if parsed.scheme != "https" and not (allow_private and parsed.scheme == "http"):
        raise EgressRefused("the URL must start with https://")
    host = parsed.raw_host
    if not host or not parsed.absolute:
        raise EgressRefused("the URL has no host")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise EgressRefused(f"the URL for {host} must not carry a user name or password")
    if "#" in url:
        raise EgressRefused(f"the URL for {host} must not have a #fragment")
    if len(normalized) > MAX_URL_LENGTH:
        raise EgressRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    address = _ip_literal(host.strip("[]"))
    if address is not None and not allow_private and not is_public(address):
        raise EgressRefused(f"{host} is not a public address")
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
    parsed = URL(check_url(url, allow_private=allow_private))
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = str(parsed.raw_host).strip("[]")
    try:
        addresses = await _resolve(host, port)
    except socket.gaierror:
        raise EgressRefused(f"{host} does not resolve") from None
    _vet(host, addresses, allow_private=allow_private)


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


class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver: the addresses a name has, refused unless every
    one is public. (IP literals never reach a resolver: Client.post checks them.)"""

    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            addresses = await _resolve(host, port)
        except socket.gaierror:
            raise OSError(f"{host} does not resolve") from None  # may resolve on a later try
        _vet(host, addresses, allow_private=self._allow_private)
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]

    async def close(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes  # its first bytes, as sent (not decompressed)


class Client:
    """POSTs to users' URLs: no redirects followed, no proxy from the
    environment, every destination vetted. Raises EgressRefused for a
    destination that is not allowed, aiohttp.ClientError for what the
    network or the receiver did, TimeoutError past `timeout`."""

    def __init__(self, *, allow_private: bool, limit: int = 100) -> None:
        self._allow_private = allow_private
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use, inside the event loop that will run it.
        if self._session is None:
            connector = aiohttp.TCPConnector(
                resolver=_GuardedResolver(allow_private=self._allow_private),
                # The system's trusted CAs as they are now (SSL_CERT_FILE
                # included), not as they were when aiohttp was imported.
                ssl=ssl.create_default_context(),
                limit=self._limit,
                ttl_dns_cache=10,  # vetted answers only
            )
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, auto_decompress=False
            )
        return self._session

    async def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout: float,  # noqa: ASYNC109 - one deadline for connect, send and the read
        keep: int,
    ) -> Answer:
        """POST within `timeout` seconds from connecting to the last byte
        kept, reading at most `keep` bytes of the answer."""
        check_url(url, allow_private=self._allow_private)  # IP literals bypass the resolver
        async with asyncio.timeout(timeout):
            async with self._open().post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                kept = await response.content.read(keep)
                return Answer(
                    response.status, {k.lower(): v for k, v in response.headers.items()}, kept
                )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
