"""Uploads to a real server process over raw sockets: a client that drops
mid-upload is one line in the log and leaves nothing; a store that fails
answers 503 on a connection that takes the client's next request."""

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from formsapi.db.engine import create_engine
from formsapi.db.session import create_sessionmaker
from formsapi.file.storage import CHUNK
from formsapi.models import File, FileChunk
from formsapi.tenancy import unscoped
from tests.file.test_uploads import PDF
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org
from tests.support.servers import Server, clean_env, free_port, start_server, stop_servers
from tests.support.shared_database import shared_database

WAIT = 60  # seconds a busy machine may take to get there; a healthy one is quick
BLOCKS: list[dict[str, Any]] = [
    {"type": "file", "key": "cv", "title": "Your CV", "maxSize": 1024 * 1024},
]
# For the server's S3 client, which finds them in its environment.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database a server process of the test's own uses."""
    with shared_database(request, tmp_path) as url:
        yield url


async def _tenant(url: str) -> tuple[str, str]:
    """A published form with a file question (`cv`, up to 1 MiB), and a key."""
    engine = create_engine(url)
    async with create_sessionmaker(engine)() as session:
        org = await create_org(session)
        _, secret = await create_key(session, org, scopes=EVERY_SCOPE)
        form = await create_form(session, org, blocks=BLOCKS)
        await session.commit()
    await engine.dispose()
    return form.id, secret


async def _rows(url: str) -> tuple[int, int]:
    engine = create_engine(url)
    async with create_sessionmaker(engine)() as session:
        files = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
        chunks = await session.scalar(select(func.count()).select_from(FileChunk))
    await engine.dispose()
    return int(files or 0), int(chunks or 0)


def _port(server: Server) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def test_a_client_dropping_mid_upload_is_one_line_in_the_log_and_leaves_nothing(
    shared_url: str, tmp_path: Path
) -> None:
    form_id, _ = asyncio.run(_tenant(shared_url))
    server = start_server(tmp_path, clean_env(database_url=shared_url), "server")
    try:
        server.wait_until_healthy()
        with socket.create_connection(("127.0.0.1", _port(server)), timeout=WAIT) as sock:
            sock.sendall(
                f"POST /f/{form_id}/files?question=cv&name=cv.pdf HTTP/1.1\r\nHost: t\r\n"
                f"Content-Length: {1024 * 1024}\r\n\r\n".encode()
                + PDF
                + b"\0" * CHUNK
            )
            # Part of it stored (a chunk written), then the client goes.
            deadline = time.monotonic() + WAIT
            while asyncio.run(_rows(shared_url))[1] == 0:
                assert time.monotonic() < deadline, server.stderr
                time.sleep(0.05)
        while "went away" not in server.stderr and "Traceback" not in server.stderr:
            assert time.monotonic() < deadline, server.stderr
            time.sleep(0.05)
    finally:
        stop_servers([server])

    logged = [line for line in server.stderr.splitlines() if form_id in line]
    assert len(logged) == 1, server.stderr
    assert "went away" in logged[0]
    assert "Traceback" not in server.stderr
    assert asyncio.run(_rows(shared_url)) == (0, 0)


def _request(sock: socket.socket, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request on `sock`, and its answer's status and body (read by its
    Content-Length, so the connection can carry the next one)."""
    sock.sendall(head.encode() + b"\r\n" + body)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection: {received!r}"
        received += chunk
    header, _, rest = received.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        rest += chunk
    return int(lines[0].split()[1]), rest[:length]


def test_after_a_503_from_the_store_the_connection_takes_the_next_request(
    shared_url: str, tmp_path: Path
) -> None:
    """A store on a closed port: the upload's answer, then another request
    on the same connection (a 500 used to close it)."""
    form_id, secret = asyncio.run(_tenant(shared_url))
    env = clean_env(
        database_url=shared_url,
        upload_storage="s3",
        s3_bucket="formsapi-files",
        s3_endpoint_url=f"http://127.0.0.1:{free_port()}",  # nothing listens there
    )
    server = start_server(tmp_path, env | CREDENTIALS, "server", ("--no-access-log",))
    try:
        server.wait_until_healthy()
        with socket.create_connection(("127.0.0.1", _port(server)), timeout=WAIT) as sock:
            # More than the server reads before it answers: the rest, still
            # arriving, must not be taken for the next request.
            body = PDF + b"\0" * (512 * 1024)
            status, answer = _request(
                sock,
                f"POST /v1/forms/{form_id}/files?question=cv HTTP/1.1\r\nHost: t\r\n"
                f"Authorization: Bearer {secret}\r\nContent-Length: {len(body)}\r\n",
                body,
            )
            assert status == 503, answer
            again, listed = _request(
                sock, f"GET /v1/forms HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {secret}\r\n"
            )
            assert again == 200, listed
    finally:
        stop_servers([server])
    assert "Traceback" not in server.stderr
    assert asyncio.run(_rows(shared_url)) == (0, 0)
