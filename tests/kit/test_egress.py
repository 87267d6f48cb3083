"""Outbound requests stay off loopback and private networks unless the
operator allows them: when a URL is registered, and again at connect time on
the address the connection goes to, with TLS still checking the URL's name."""

import asyncio
import datetime as dt
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from yarl import URL

from formsapi.kit.egress import (
    Answer,
    Client,
    EgressRefused,
    LookupTimedOut,
    Policy,
    check_destination,
    check_url,
    is_public,
)

BODY = b"hello, webhook"


@dataclass
class Receiver:
    """A real HTTP server on loopback that counts the connections it takes."""

    port: int = 0
    connections: int = 0
    server_names: list[str | None] = field(default_factory=list)  # SNI, under TLS

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))
        await writer.drain()
        writer.close()


@asynccontextmanager
async def serve(tls: ssl.SSLContext | None = None) -> AsyncIterator[Receiver]:
    receiver = Receiver()
    if tls is not None:
        tls.sni_callback = lambda _conn, name, _ctx: receiver.server_names.append(name)
    server = await asyncio.start_server(receiver.answer, "127.0.0.1", 0, ssl=tls)
    receiver.port = server.sockets[0].getsockname()[1]
    async with server:
        yield receiver


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with serve() as receiver:
        yield receiver


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for `name` that is its own issuer, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/hook", "https://"),
        ("ftp://example.com/hook", "https://"),
        ("/hook", "https://"),
        ("https:///hook", "no host"),
        ("https://user:secret@example.com/hook", "user name or password"),
        ("https://token@example.com/hook", "user name or password"),
        ("https://example.com/hook#part", "fragment"),
        ("https://example.com/" + "a" * 2040, "longer than 2048"),
        ("https://[::1/hook", "not a valid URL"),
        ("https://[2606:4700::1%25eth0]/hook", "network interface"),
        ("https://ex\x00ample.com/", "control character \\(U\\+0000\\)"),
        ("https://example.com:0/hook", "no usable port"),
        ("https://exa mple.com/", "not a valid host name"),
        ("https://example.com:44\u0661/hook", "no usable port"),
        ("https://example.com:44\u00a0/hook", "no usable port"),
        ("https://[v1.x]/hook", "no IPv6 address"),
        ("https://xn--zz.com/hook", "not a valid host name"),
    ],
)
def test_a_url_that_is_not_plain_https_to_a_host_is_refused(url: str, why: str) -> None:
    with pytest.raises(EgressRefused, match=why) as refused:
        check_url(url, allow_private=False)

    assert "secret" not in str(refused.value)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "0.0.0.0",  # noqa: S104 (a destination, not a bind address)
        "224.0.0.1",
        "192.0.0.192",
        "[::1]",
        "[fd00:ec2::254]",
        "[fe80::1]",
        "[ff02::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:169.254.169.254]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "127.1",  # the short forms getaddrinfo reads as 127.0.0.1
        "2130706433",
        "0x7f.1",
    ],
)
def test_an_ip_literal_off_the_public_internet_is_refused_without_dns(host: str) -> None:
    with pytest.raises(EgressRefused, match="is not a public address"):
        check_url(f"https://{host}/hook", allow_private=False)

    allowed = check_url(f"http://{host}/hook", allow_private=True)
    assert URL(allowed).host == URL(f"http://{host}/hook").host  # IPv6 may come back compressed


@pytest.mark.parametrize(
    "url",
    ["https://93.184.216.34/hook", "https://example.com/hook", "https://[2606:4700::1111]/"],
)
def test_a_public_address_or_any_name_passes_the_syntax_check(url: str) -> None:
    assert check_url(url, allow_private=False) == url


def test_the_url_comes_back_normalized() -> None:
    assert check_url("HTTPS://Example.COM/a hook?x=1", allow_private=False) == (
        "https://example.com/a%20hook?x=1"
    )


@pytest.mark.parametrize(
    ("embedding", "public"),
    [
        ("::ffff:8.8.8.8", True),
        ("::ffff:10.0.0.1", False),
        ("64:ff9b::808:808", True),  # NAT64
        ("64:ff9b::a00:1", False),
        ("2002:808:808::", True),  # 6to4
        ("2002:c0a8:101::", False),
        ("::808:808", True),  # IPv4-compatible
        ("::a00:1", False),
    ],
)
def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_by_it(embedding: str, public: bool) -> None:
    assert is_public(embedding) is public


def test_what_is_not_an_address_is_not_public() -> None:
    assert not is_public("example.com")
    assert not is_public("")


async def test_a_name_that_resolves_to_loopback_is_refused_when_registered() -> None:
    with pytest.raises(EgressRefused, match="localhost resolves to an address that is not public"):
        await check_destination("https://localhost:8443/hook", Policy(allow_private=False))

    await check_destination("https://localhost:8443/hook", Policy(allow_private=True))


async def test_a_name_that_does_not_resolve_is_refused_with_a_clear_message() -> None:
    with pytest.raises(EgressRefused, match=r"^does-not-exist\.invalid does not resolve$"):
        await check_destination("https://does-not-exist.invalid/hook", Policy(allow_private=True))


async def test_a_name_whose_dns_never_answers_is_dropped_at_the_deadline_holding_up_nothing() -> (
    None
):
    # A real DNS server on loopback that takes every query and answers none.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    policy = Policy(allow_private=True, nameservers=(f"127.0.0.1:{port}",), lookup_timeout=0.5)
    try:
        hanging = [
            asyncio.create_task(check_destination(f"https://n{i}.example/hook", policy))
            for i in range(20)
        ]
        await asyncio.sleep(0.1)
        await check_destination("http://localhost:1/hook", policy)  # meanwhile: at once

        assert not any(task.done() for task in hanging)
        outcomes = await asyncio.gather(*hanging, return_exceptions=True)
        silent.setblocking(False)
        asked = silent.recv(512)
    finally:
        silent.close()

    for index, outcome in enumerate(outcomes):
        assert isinstance(outcome, EgressRefused)
        assert (
            str(outcome)
            == f"n{index}.example: no DNS answer in 0.5 s: try again, or check the name"
        )
    assert b"example" in asked  # the lookups went to that server, not the system's


async def test_a_name_whose_dns_never_answers_is_a_timeout_when_sending() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    policy = Policy(
        allow_private=True, nameservers=(f"127.0.0.1:{silent.getsockname()[1]}",), lookup_timeout=1
    )
    client = Client(policy)
    try:
        with pytest.raises(LookupTimedOut, match=r"^n\.example: no DNS answer in 1 s$"):
            await client.post("http://n.example/hook", b"{}", {}, timeout=10, keep=1024)
    finally:
        await client.close()
        silent.close()


async def _post(url: str, *, allow_private: bool) -> Answer:
    client = Client(Policy(allow_private=allow_private))
    try:
        return await client.post(url, b"{}", {}, timeout=10, keep=1024)
    finally:
        await client.close()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::ffff:127.0.0.1]"])
async def test_a_host_that_resolves_to_loopback_is_refused_at_connect_time(
    receiver: Receiver, host: str
) -> None:
    with pytest.raises(EgressRefused, match=r"not (a )?public"):
        await _post(f"https://{host}:{receiver.port}/hook", allow_private=False)

    assert receiver.connections == 0


async def test_with_private_networks_allowed_the_request_reaches_the_receiver(
    receiver: Receiver,
) -> None:
    answer = await _post(f"http://localhost:{receiver.port}/hook", allow_private=True)

    assert (answer.status, answer.body) == (200, BODY)
    assert receiver.connections == 1


async def test_a_name_that_stops_resolving_is_a_connection_error_at_connect_time() -> None:
    # Unlike a refusal, a lookup that fails may succeed on a later try.
    with pytest.raises(aiohttp.ClientConnectorError, match=r"does-not-exist\.invalid"):
        await _post("https://does-not-exist.invalid/hook", allow_private=True)


async def test_proxies_from_the_environment_are_not_used(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        await _post(f"http://localhost:{receiver.port}/hook", allow_private=True)

        assert (proxy.connections, receiver.connections) == (0, 1)


async def test_tls_connects_to_the_vetted_address_but_verifies_the_urls_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path, "localhost")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the CA OpenSSL's default paths trust

    async with serve(tls) as server:
        answer = await _post(f"https://localhost:{server.port}/hook", allow_private=True)
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await _post(f"https://127.0.0.1:{server.port}/hook", allow_private=True)

    assert answer.body == BODY
    assert server.server_names == ["localhost", None]  # no SNI for an IP literal
