"""The clients of a process share one TLS context, and it still verifies: a
server whose certificate no trusted authority signed is refused, by the first
client made and by every one after it, sync and async."""

import http.server
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from formsapi_client import AsyncClient, Client
from formsapi_client.errors import ConnectionFailed
from tests.support.servers import in_thread


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"data": [], "pagination": {"page": 1, "limit": 1, "total": 0}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def self_signed(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server on loopback whose certificate signs itself; its URL."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with in_thread(server) as port:
        yield f"https://127.0.0.1:{port}"


def test_every_client_refuses_a_certificate_no_authority_signed(self_signed: str) -> None:
    for _ in range(2):
        with (
            Client(self_signed, "fapi_key", max_retries=0) as client,
            pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"),
        ):
            client.forms.list()


async def test_every_async_client_refuses_a_certificate_no_authority_signed(
    self_signed: str,
) -> None:
    for _ in range(2):
        async with AsyncClient(self_signed, "fapi_key", max_retries=0) as client:
            with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
                await client.forms.list()
