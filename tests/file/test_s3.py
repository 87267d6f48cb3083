"""Uploads kept in an S3-compatible store, against a real one: moto's server
in a process of its own on loopback (no mock in this process), one per
module, a bucket per test. The file rows are in the database, so every test
runs on both engines. What is promised: the bytes come back as they went
(one put, or a multipart upload past the part size), under the prefix and
the file's id; a deleted submission and an upload no submission took leave
nothing in the bucket nor in the files table; an upload cut short leaves no
object and no unfinished multipart upload; and a file stays where it was
stored when the setting changes."""

import hashlib
import importlib.util
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.db.session import (
    WriteSession,
    create_read_sessionmaker,
    create_write_sessionmaker,
    session_scope,
)
from formsapi.file import repository
from formsapi.file import service as file_service
from formsapi.file.storage import PART, Storages
from formsapi.kit.ids import new_id
from formsapi.kit.time import shift, utcnow
from formsapi.models import File, FileChunk
from formsapi.tenancy import unscoped
from tests.conftest import Api, service_unavailable
from tests.support.factories import publish_over_api
from tests.support.servers import free_port

PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40
PREFIX = "tenant-a/uploads/"
MAX_SIZE = PART + PART // 4  # over one part: a file near it goes as a multipart upload


@dataclass
class Sweep:
    sessionmaker: async_sessionmaker[WriteSession]
    storages: Storages

    async def purge(self) -> int:
        return await file_service.purge(self.sessionmaker, self.storages)


CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}

FORM: dict[str, Any] = {
    "title": "Apply",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "file", "key": "cv", "title": "Your CV", "maxSize": 3 * PART},
        {"type": "file", "key": "scan", "title": "A scan", "maxSize": MAX_SIZE},
    ],
}


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's S3 server, a process of its own on a free loopback port."""
    if importlib.util.find_spec("moto.server") is None:
        service_unavailable("moto[server] is not installed (pip install -e '.[test]')")
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_listening(process, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"moto's server exited with {process.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"moto's server not listening after 60 s:\n{log.read_text()}")


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 client on the server, credentials for the app's own client
    (boto3 reads them from the environment), and a new bucket: `s3.bucket`."""
    import boto3

    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", **CREDENTIALS)
    client.bucket = f"formsapi-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=client.bucket)
    return client


@pytest.fixture
def settings(database_url: str, s3: Any, s3_endpoint: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        upload_storage="s3",
        s3_bucket=s3.bucket,
        s3_endpoint_url=s3_endpoint,
        s3_prefix=PREFIX,
    )


@pytest.fixture
def sweep(engine: AsyncEngine, settings: Settings) -> Sweep:
    """The storages and sessions a purge (the sweeps) works with, beside the app's."""
    sessionmaker = create_write_sessionmaker(engine)
    storages = Storages(settings, sessionmaker, create_read_sessionmaker(engine))
    return Sweep(sessionmaker, storages)


def _objects(s3: Any) -> dict[str, int]:
    listed = s3.list_objects_v2(Bucket=s3.bucket)
    return {item["Key"]: item["Size"] for item in listed.get("Contents", [])}


def _unfinished(s3: Any) -> list[str]:
    return [u["Key"] for u in s3.list_multipart_uploads(Bucket=s3.bucket).get("Uploads", [])]


async def _rows(engine: AsyncEngine) -> tuple[int, int]:
    async with create_write_sessionmaker(engine)() as session:
        files = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
        chunks = await session.scalar(select(func.count()).select_from(FileChunk))
    return int(files or 0), int(chunks or 0)


async def _upload(api: Api, secret: str, form_id: str, key: str, data: Any) -> Any:
    return await api.post(
        f"/v1/forms/{form_id}/files", secret, params={"question": key, "name": "f"}, content=data
    )


def _large() -> bytes:
    """Two whole parts and a piece: three parts, the last a short one."""
    return PDF + bytes(range(256)) * ((2 * PART + 12_345) // 256)


async def _pieces(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    """A body with no Content-Length: sent chunked, a piece at a time."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("size", ["small", "multipart"])
async def test_a_file_goes_to_the_bucket_under_its_prefix_and_comes_back_whole(
    api: Api, session: AsyncSession, engine: AsyncEngine, s3: Any, size: str
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    data = PDF if size == "small" else _large()

    uploaded = await _upload(api, secret, form_id, "cv", _pieces(data))

    assert uploaded.status_code == 201, uploaded.text
    file = uploaded.json()
    assert file["size"] == len(data)
    assert file["sha256"] == hashlib.sha256(data).hexdigest()
    assert _objects(s3) == {PREFIX + file["id"]: len(data)}
    assert _unfinished(s3) == []
    assert await _rows(engine) == (1, 0)  # a row in the database, no chunk there
    download = await api.get(f"/v1/files/{file['id']}/content", secret)
    assert download.status_code == 200
    assert download.headers["content-length"] == str(len(data))
    assert download.content == data


async def test_a_deleted_submission_leaves_nothing_in_the_bucket_nor_the_table(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    s3: Any,
    sweep: Sweep,
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    cv = (await _upload(api, secret, form_id, "cv", _large())).json()["id"]
    scan = (await _upload(api, secret, form_id, "scan", PDF)).json()["id"]
    sent = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "cv": cv, "scan": scan}},
    )
    assert sent.status_code == 201, sent.text
    assert set(_objects(s3)) == {PREFIX + cv, PREFIX + scan}
    url = f"/v1/forms/{form_id}/submissions/{sent.json()['id']}"

    assert (await api.delete(url, secret)).status_code == 204

    # Gone for the API at once; the bytes go with the purge, then the rows.
    assert (await api.get(f"/v1/files/{cv}/content", secret)).status_code == 404
    assert await sweep.purge() == 2
    assert _objects(s3) == {}
    assert await _rows(engine) == (0, 0)


async def test_an_upload_over_the_size_leaves_no_object_and_no_unfinished_upload(
    api: Api, session: AsyncSession, engine: AsyncEngine, s3: Any
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    # Past a whole part before it runs over: a multipart upload was begun.
    over = PDF + b"\x00" * MAX_SIZE

    refused = await _upload(api, secret, form_id, "scan", _pieces(over))

    assert refused.status_code == 413, refused.text
    assert _objects(s3) == {}
    assert _unfinished(s3) == []
    assert await _rows(engine) == (0, 0)


async def test_uploads_no_submission_takes_are_purged_after_their_time(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    s3: Any,
    settings: Settings,
    sweep: Sweep,
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    kept = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    sent = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "A", "cv": kept}}
    )
    assert sent.status_code == 201, sent.text
    orphan = (await _upload(api, secret, form_id, "cv", _large())).json()["id"]

    assert await sweep.purge() == 0
    assert set(_objects(s3)) == {PREFIX + kept, PREFIX + orphan}
    with shift(timedelta(hours=settings.upload_orphan_hours, minutes=1)):
        assert await sweep.purge() == 1

    assert set(_objects(s3)) == {PREFIX + kept}
    assert await _rows(engine) == (1, 0)
    assert (await api.get(f"/v1/files/{kept}/content", secret)).content == PDF


async def test_an_upload_whose_process_died_leaves_no_unfinished_upload_after_the_purge(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    s3: Any,
    settings: Settings,
    sweep: Sweep,
) -> None:
    form_id, _, org_id = await publish_over_api(api, session, FORM)
    # What a process that died mid-upload leaves: a row never completed,
    # and a multipart upload begun, with a part, never completed nor aborted.
    now = utcnow()
    file = File(
        id=new_id("fil"),
        organization_id=org_id,
        form_id=form_id,
        question="cv",
        name="f",
        content_type="application/pdf",
        size=0,
        storage="s3",
        created_at=now,
        expires_at=now + timedelta(hours=settings.upload_orphan_hours),
    )
    async with session_scope(sweep.sessionmaker) as scope:
        await repository.add(scope, file)
    writer = sweep.storages.current.writer(file.id)
    await writer.write(PDF + b"\x00" * PART)
    assert _unfinished(s3) == [PREFIX + file.id]

    with shift(timedelta(hours=settings.upload_orphan_hours, minutes=1)):
        assert await sweep.purge() == 1

    assert _unfinished(s3) == []
    assert _objects(s3) == {}
    assert await _rows(engine) == (0, 0)


async def test_a_file_stored_in_the_database_stays_readable_after_the_switch_to_s3(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    s3: Any,
    settings: Settings,
    sweep: Sweep,
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    settings.upload_storage = "database"  # the app reads the setting per upload
    before = (await _upload(api, secret, form_id, "cv", _large())).json()["id"]
    assert _objects(s3) == {}

    settings.upload_storage = "s3"
    after = (await _upload(api, secret, form_id, "scan", PDF)).json()["id"]

    assert set(_objects(s3)) == {PREFIX + after}
    assert (await api.get(f"/v1/files/{before}/content", secret)).content == _large()
    assert (await api.get(f"/v1/files/{after}/content", secret)).content == PDF
    # Each goes from where it is when their submission does.
    sent = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "cv": before, "scan": after}},
    )
    assert sent.status_code == 201, sent.text
    url = f"/v1/forms/{form_id}/submissions/{sent.json()['id']}"
    assert (await api.delete(url, secret)).status_code == 204
    await sweep.purge()
    assert _objects(s3) == {}
    assert await _rows(engine) == (0, 0)


async def test_a_file_whose_object_is_gone_answers_404_not_a_broken_200(
    api: Api, session: AsyncSession, s3: Any
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    file_id = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    s3.delete_object(Bucket=s3.bucket, Key=PREFIX + file_id)

    lost = await api.get(f"/v1/files/{file_id}/content", secret)

    assert lost.status_code == 404
