"""Outbound HTTP to URLs users give us (webhooks), kept off our own networks.

A URL is checked twice: when it is registered (check_url, check_destination),
and again at every request (Client.post), on the very addresses the
connection goes to, since a name can resolve elsewhere by the time we
connect (DNS rebinding). aiohttp's connector asks our resolver for the
addresses, connects to one of them, and hands the URL's host to TLS as
server_hostname: SNI and certificate checks stay on the real name.

Names are looked up with c-ares (aiodns), not the system's getaddrinfo: that
runs in the event loop's few shared threads, which a name whose DNS hangs
holds for as long as the system resolver waits (a thread cannot be
cancelled), and every other lookup of the process queues behind it. A c-ares
query is a socket that is simply dropped at the deadline.

Why aiohttp and not httpx, the stack's HTTP client: a worker sends thousands
of requests a second, and httpx (over httpcore and anyio) cost 1.56 ms of CPU
a request where aiohttp cost 0.19 ms, measured side by side (bench/RESULTS.md).
"""

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import aiodns
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
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# C0, DEL and C1 controls: never part of a URL someone meant (the WHATWG
# parser strips or refuses them too), and NUL breaks everything downstream.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")
# A host name as DNS carries it, after IDNA: letters, digits, hyphens (and
# the underscores some real names have), labels of 1 to 63.
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class EgressRefused(Exception):
    """Its message is safe to show the user: it names the host and why, never credentials."""


class LookupTimedOut(TimeoutError):
    """A name's DNS gave no answer within the policy's lookup_timeout."""


# What looks a name up: (host, port) -> its addresses. Tests substitute one
# through resolved_by(), as they move the clock through kit.time.shift().
Lookup = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class Policy:
    """Where outbound requests may go, and how their names are looked up."""

    allow_private: bool = False
    # c-ares's "address" or "address:port"; empty: the system's resolv.conf.
    nameservers: tuple[str, ...] = ()
    lookup_timeout: float = 5.0  # seconds a lookup may take, retries included


def check_url(url: str, *, allow_private: bool) -> str:
    """Syntax only, no DNS: the URL normalized, or EgressRefused. IP-literal
    hosts, including the short forms getaddrinfo accepts (127.1, 2130706433),
    are judged here already."""
    if len(url) > MAX_URL_LENGTH:
        raise EgressRefused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    control = _CONTROL.search(url)
    if control is not None:
        raise EgressRefused(f"the URL contains a control character (U+{ord(control[0]):04X})")
    _authority_as_written(url)
    try:
        parsed = URL(url)
        normalized = str(parsed)
        port = parsed.port
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
    if port is not None and not 0 < port < 65536:
        raise EgressRefused(f"the URL for {host} has no usable port")
    if "%" in host:  # an IPv6 zone names an interface of ours: never a receiver's
        raise EgressRefused(f"the URL for {host} names a network interface")
    address = _ip_literal(host.strip("[]"))
    if address is None and not _is_host_name(host):
        raise EgressRefused("the URL's host is not a valid host name")
    if address is not None and not allow_private and not is_public(address):
        raise EgressRefused(f"{host} is not a public address")
    return normalized


def _is_host_name(host: str) -> bool:
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(
        _LABEL.match(label) and (not label.startswith("xn--") or _punycode(label))
        for label in labels
    )


def _punycode(label: str) -> bool:
    try:
        label.encode("ascii").decode("idna")
    except UnicodeError:
        return False
    return True


def _authority_as_written(url: str) -> None:
    """What the URL parser forgives, refused: a port that is not ASCII
    digits (it reads Arabic-Indic digits, and drops spaces around them), or
    brackets around what is not an IPv6 address (it unwraps [v1.x] into a
    name to look up)."""
    found = _AUTHORITY.match(url)
    if found is None:
        return  # no authority: the checks after the parse refuse it
    authority = found[1].rpartition("@")[2]
    if authority.startswith("["):
        inside, _, port = authority[1:].partition("]")
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            raise EgressRefused("the URL's brackets hold no IPv6 address") from None
        if port and not port.startswith(":"):
            raise EgressRefused("not a valid URL")
        port = port[1:]
    else:
        port = authority.rpartition(":")[2] if ":" in authority else ""
    if port and not (port.isascii() and port.isdigit()):
        raise EgressRefused("the URL has no usable port")


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


async def check_destination(url: str, policy: Policy) -> str:
    """check_url, then every address the host resolves to must be public:
    the URL normalized, or EgressRefused. Run it outside any transaction: a
    lookup may take the policy's whole lookup_timeout."""
    normalized = check_url(url, allow_private=policy.allow_private)
    parsed = URL(normalized)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = str(parsed.raw_host).strip("[]")
    try:
        addresses = await _resolve(host, port, policy)
    except LookupTimedOut as slow:
        raise EgressRefused(f"{slow}: try again, or check the name") from None
    except socket.gaierror:
        raise EgressRefused(f"{host} does not resolve") from None
    _vet(host, addresses, allow_private=policy.allow_private)
    return normalized


def _ip_literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:  # 127.1, 0x7f.1, 2130706433: getaddrinfo reads them as IPv4 addresses
        return socket.inet_ntoa(socket.inet_aton(host))
    except (OSError, ValueError):  # ValueError: a NUL in the text
        return None


# Tests' lookup, when one is substituted (resolved_by).
_substitute: Lookup | None = None


@contextmanager
def resolved_by(lookup: Lookup) -> Iterator[None]:
    """Every name is looked up by `lookup` for the duration of the block:
    how tests give a name slow, failing or hanging DNS."""
    global _substitute
    before, _substitute = _substitute, lookup
    try:
        yield
    finally:
        _substitute = before


async def _c_ares(host: str, port: int, policy: Policy) -> list[str]:
    """The host's addresses from DNS (and /etc/hosts). A channel of its own
    (half a millisecond): closed with the lookup, so a query given up on
    never answers into a loop that has moved on or closed. c-ares gets the
    whole deadline, split in two tries, so it gives up no sooner than we do."""
    channel = aiodns.DNSResolver(
        list(policy.nameservers) or None, timeout=policy.lookup_timeout / 2, tries=2
    )
    try:
        result = await channel.getaddrinfo(host, port=port, type=socket.SOCK_STREAM)
    except aiodns.error.DNSError as error:
        if error.args and error.args[0] == aiodns.error.ARES_ETIMEOUT:
            raise LookupTimedOut(f"{host}: no DNS answer in {policy.lookup_timeout:g} s") from None
        raise socket.gaierror(f"{host} does not resolve") from None
    finally:
        await channel.close()
    return [node.addr[0].decode() for node in result.nodes]


async def _resolve(host: str, port: int, policy: Policy) -> list[str]:
    """The host's addresses, within the policy's lookup_timeout:
    LookupTimedOut past it, socket.gaierror if it has none."""
    literal = _ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        async with asyncio.timeout(policy.lookup_timeout):
            if _substitute is not None:
                addresses = await _substitute(host, port)
            else:
                addresses = await _c_ares(host, port, policy)
    except LookupTimedOut:
        raise
    except TimeoutError:
        raise LookupTimedOut(f"{host}: no DNS answer in {policy.lookup_timeout:g} s") from None
    except (OSError, UnicodeError):
        raise socket.gaierror(f"{host} does not resolve") from None
    if not addresses:
        raise socket.gaierror(f"{host} does not resolve")
    return list(dict.fromkeys(addresses))


def _vet(host: str, addresses: list[str], *, allow_private: bool) -> None:
    # Every address, since the connection may go to any of them. Which one
    # failed stays unsaid: the user would learn what our internal names are.
    if not allow_private and not all(is_public(address) for address in addresses):
        raise EgressRefused(f"{host} resolves to an address that is not public")


class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver: the addresses a name has, refused unless every
    one is public. (IP literals never reach a resolver: Client.post checks
    them.) A lookup past its deadline raises LookupTimedOut, which aiohttp
    passes on as it is: the attempt timed out."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            addresses = await _resolve(host, port, self._policy)
        except socket.gaierror:
            raise OSError(f"{host} does not resolve") from None  # may resolve on a later try
        _vet(host, addresses, allow_private=self._policy.allow_private)
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
    network or the receiver did, LookupTimedOut for a name whose DNS did not
    answer in time, TimeoutError past `timeout`."""

    def __init__(self, policy: Policy, *, limit: int = 100) -> None:
        self._policy = policy
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use, inside the event loop that will run it.
        if self._session is None:
            connector = aiohttp.TCPConnector(
                resolver=_GuardedResolver(self._policy),
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
        check_url(url, allow_private=self._policy.allow_private)  # IP literals bypass the resolver
        try:
            async with asyncio.timeout(timeout):
                async with self._open().post(
                    url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    kept = await response.content.read(keep)
                    return Answer(
                        response.status, {k.lower(): v for k, v in response.headers.items()}, kept
                    )
        except TimeoutError as error:  # aiohttp wraps a lookup's: say which it was
            slow = error.__cause__ or error.__context__
            if isinstance(slow, LookupTimedOut):
                raise slow from None
            raise

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
