"""A long export does not hold a server that is told to stop: past
FORMSAPI_SHUTDOWN_GRACE it is cut, and the client can tell (no end line).
Nor does an export of a form deleted while it streams look complete."""

import asyncio
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert, update

from formsapi.db.engine import create_engine
from formsapi.kit.time import utcnow
from formsapi.models import Form, Submission
from formsapi.tenancy import scoped
from tests.support.servers import clean_env, start_server, stop_servers
from tests.support.shared_database import Setup, shared_database, tenant


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    with shared_database(request, tmp_path) as url:
        yield asyncio.run(tenant(url, forms=1))


async def _fill(setup: Setup, form_id: str, count: int) -> None:
    """`count` submissions written straight to the database, numbered."""
    engine = create_engine(setup.database_url)
    async with engine.begin() as connection:
        await connection.execute(
            insert(Submission),
            [
                {
                    "id": f"sub_{n:08d}",
                    "organization_id": setup.organization_id,
                    "form_id": form_id,
                    "submitted_at": utcnow(),
                    "answers": {"name": f"respondent {n}", "colors": "red"},
                    "change_seq": n,
                }
                for n in range(1, count + 1)
            ],
        )
        await connection.execute(
            update(Form)
            .where(scoped(Form, setup.organization_id), Form.id == form_id)
            .values(change_seq=count, response_count=count)
        )
    await engine.dispose()


def _slow_reader(port: int, form_id: str, secret: str) -> socket.socket:
    """A client that asked for the export, read its first bytes and stopped
    reading, with buffers so small the server must wait for it."""
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect(("127.0.0.1", port))
    client.sendall(
        f"GET /v1/forms/{form_id}/submissions/export HTTP/1.1\r\nHost: t\r\n"
        f"Authorization: Bearer {secret}\r\nConnection: close\r\n\r\n".encode()
    )
    return client


def test_an_export_to_a_client_that_stopped_reading_does_not_hold_shutdown(
    setup: Setup, tmp_path: Path
) -> None:
    form_id = setup.forms[0]
    asyncio.run(_fill(setup, form_id, 40_000))  # more than the sockets' buffers hold
    env = clean_env(database_url=setup.database_url, shutdown_grace="1")
    server = start_server(tmp_path, env, "exporting")
    try:
        server.wait_until_healthy()
        port = int(server.base_url.rsplit(":", 1)[1])
        with _slow_reader(port, form_id, setup.secret) as client:
            received = client.recv(4096)
            assert received.startswith(b"HTTP/1.1 200")
            time.sleep(0.5)  # the export fills what buffers there are, then waits

            asked = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(timeout=30)
            stopped_after = time.monotonic() - asked

            client.settimeout(10)
            while chunk := client.recv(1 << 16):
                received += chunk
    finally:
        stop_servers([server])

    assert stopped_after < 1 + 5  # the grace, and then some for a busy machine
    assert b'"end":true' not in received  # cut short, and the client can tell


def test_an_export_of_a_form_deleted_while_it_streams_has_no_end_line(
    setup: Setup, tmp_path: Path
) -> None:
    form_id = setup.forms[0]
    asyncio.run(_fill(setup, form_id, 40_000))
    server = start_server(tmp_path, clean_env(database_url=setup.database_url), "exporting")
    try:
        server.wait_until_healthy()
        port = int(server.base_url.rsplit(":", 1)[1])
        with _slow_reader(port, form_id, setup.secret) as client:
            received = client.recv(4096)
            assert received.startswith(b"HTTP/1.1 200")
            deleted = httpx.delete(
                f"{server.base_url}/v1/forms/{form_id}",
                params={"deleteSubmissions": "true"},
                headers={"Authorization": f"Bearer {setup.secret}"},
                timeout=30,
            )
            assert deleted.status_code == 204

            client.settimeout(30)
            while chunk := client.recv(1 << 16):
                received += chunk
    finally:
        stop_servers([server])

    assert received.endswith(b"0\r\n\r\n")  # the response ended, not cut
    assert received.count(b"\n{") < 40_000  # the rows deleted before they were read are missing
    assert b'"end":true' not in received  # so it must not look complete
