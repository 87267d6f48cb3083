"""Uploads to a real server process over raw sockets: a client that drops
mid-upload is one line in the log and leaves nothing."""

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from formsapi.db import create_engine, create_sessionmaker
from formsapi.file.storage import CHUNK
from formsapi.models import File, FileChunk
from formsapi.tenancy import unscoped
from tests.factories import EVERY_SCOPE, create_form, create_key, create_org
from tests.file.test_uploads import PDF
from tests.servers import Server, clean_env, start_server, stop_servers
from tests.shared_database import shared_database

WAIT = 60  # seconds a busy machine may take to get there; a healthy one is quick
BLOCKS: list[dict[str, Any]] = [
    {"type": "file", "key": "cv", "title": "Your CV", "maxSize": 1024 * 1024},
]


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
