"""An S3-compatible store that fails: unreachable (a closed port), refusing
the service's credentials (403) or an operation (501), as a real HTTP server
on loopback answers them. Uploads and downloads answer 503 with Retry-After,
never a 500, and an upload leaves no row and no chunk (a real server keeping
the connection usable after it: tests/file/test_upload_server.py)."""

import http.server
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.file import repository
from formsapi.kit.ids import new_id
from formsapi.kit.time import utcnow
from formsapi.models import File, FileChunk
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.support.factories import publish_over_api
from tests.support.servers import free_port, in_thread

PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40

BLOCKS: list[dict[str, Any]] = [
    {"type": "file", "key": "cv", "title": "Your CV", "maxSize": 1024 * 1024},
]
FORM: dict[str, Any] = {"title": "Apply", "blocks": BLOCKS}

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}

# What S3 answers a request it refuses: its status, and its XML error.
REFUSALS = {
    "credentials refused": (
        403,
        "InvalidAccessKeyId",
        "The AWS Access Key Id you provided does not exist in our records.",
    ),
    "not implemented": (
        501,
        "NotImplemented",
        "A header you provided implies functionality that is not implemented.",
    ),
}


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers every request as S3 refusing it, after reading its body."""

    protocol_version = "HTTP/1.1"
    status, code, message = 403, "AccessDenied", "Access Denied"

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{self.code}</Code><Message>{self.message}</Message>"
            "<RequestId>4442587FB7D0A2F9</RequestId></Error>"
        ).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _refuse

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(params=["unreachable", *REFUSALS])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The endpoint of a store that fails the way the parameter says."""
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    if request.param == "unreachable":
        yield f"http://127.0.0.1:{free_port()}"  # nothing listens there
        return
    status, code, message = REFUSALS[request.param]
    handler = type("Handler", (_Refusing,), {"status": status, "code": code, "message": message})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with in_thread(server) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def settings(database_url: str, store: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        public_posts_per_ip=100_000,
        secret_key=["k" * 40],
        public_url="https://forms.test",
        upload_storage="s3",
        s3_bucket="formsapi-files",
        s3_endpoint_url=store,
    )


async def _rows(engine: AsyncEngine) -> tuple[int, int]:
    async with create_write_sessionmaker(engine)() as session:
        files = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
        chunks = await session.scalar(select(func.count()).select_from(FileChunk))
    return int(files or 0), int(chunks or 0)


def _assert_unavailable(response: Any) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/storage-unavailable"
    assert 1 <= int(response.headers["retry-after"]) <= 60


async def test_an_upload_to_a_failing_store_answers_503_and_leaves_no_row(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    over_api = await api.post(
        f"/v1/forms/{form_id}/files", secret, params={"question": "cv"}, content=PDF
    )
    from_page = await api.post(f"/f/{form_id}/files", params={"question": "cv"}, content=PDF)

    _assert_unavailable(over_api)
    _assert_unavailable(from_page)
    assert await _rows(engine) == (0, 0)


async def test_a_download_from_a_failing_store_answers_503(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, FORM)
    # A file the store took when it still answered.
    now = utcnow()
    file = File(
        id=new_id("fil"),
        organization_id=org_id,
        form_id=form_id,
        question="cv",
        name="cv.pdf",
        content_type="application/pdf",
        size=len(PDF),
        sha256=b"\0" * 32,
        storage="s3",
        created_at=now,
        stored_at=now,
        expires_at=now + timedelta(hours=1),
    )
    async with create_write_sessionmaker(engine)() as writing:
        await repository.add(writing, file)
        await writing.commit()
    link = await api.post(f"/v1/files/{file.id}/links", secret, json={"expiresIn": 600})
    assert link.status_code == 201, link.text

    with_key = await api.get(f"/v1/files/{file.id}/content", secret)
    by_link = await api.get(link.json()["url"].removeprefix("https://forms.test"))

    _assert_unavailable(with_key)
    _assert_unavailable(by_link)
    assert (await api.get(f"/v1/files/{file.id}", secret)).status_code == 200  # still there
