"""Files through the client, against a real server on each engine: uploads
from bytes, a path and file objects (streamed a chunk at a time), named by a
submission, downloaded to a path or a file object with the same bytes,
shared by a signed link; refusals as typed errors; and retries that never
upload twice."""

import hashlib
import io
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from formsapi_client import (
    AsyncClient,
    BadRequest,
    Client,
    ConnectionFailed,
    PayloadTooLarge,
    ServiceUnavailable,
    UnreadableResponse,
    UnsupportedMediaType,
    ValidationFailed,
)
from formsapi_client._files import CHUNK, Received
from formsapi_client.models import Block, FileUpload, FormDetail, ShortText
from tests.client.conftest import Live
from tests.client.proxy import Proxy, busy

PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40
# Larger than a chunk: read, sent and written in several.
BIG_PDF = b"%PDF-1.7\n" + bytes(range(256)) * (6 * 1024)  # 1.5 MiB and 9 bytes
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_form(client: Client) -> FormDetail:
    """A published form with a name and a file question taking up to two PDFs."""
    blocks: list[Block] = [
        ShortText(key="name", title="Name", required=True),
        FileUpload(
            key="cv",
            title="CV",
            required=True,
            accept=["application/pdf"],
            max_files=2,
            max_size=4 * 1024 * 1024,
        ),
    ]
    form = client.forms.create("Files", blocks)
    return client.forms.update(form.id, status="published")


def test_uploads_from_bytes_and_a_path_are_named_by_a_submission_and_download_the_same(
    client: Client, tmp_path: Path
) -> None:
    form = file_form(client)
    assert isinstance(form.blocks[1], FileUpload)
    assert (form.blocks[1].max_files, form.blocks[1].accept) == (2, ["application/pdf"])
    source = tmp_path / "report.pdf"
    source.write_bytes(BIG_PDF)

    small = client.files.upload(form.id, "cv", PDF, name="cover letter.pdf")
    big = client.files.upload(form.id, "cv", source)

    assert (small.name, small.content_type, small.size, small.sha256) == (
        "cover letter.pdf",
        "application/pdf",
        len(PDF),
        sha256(PDF),
    )
    assert (big.name, big.size, big.sha256) == ("report.pdf", len(BIG_PDF), sha256(BIG_PDF))
    assert (big.form_id, big.question, big.submission_id) == (form.id, "cv", None)
    assert big.url == f"/v1/files/{big.id}/content"

    submission = client.submissions.create(form.id, {"name": "Ada", "cv": f"{small.id},{big.id}"})
    assert client.files.get(big.id).submission_id == submission.id

    copy = tmp_path / "copy.pdf"
    client.files.download(big.id, to=copy)
    assert copy.read_bytes() == BIG_PDF
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.pdf", "report.pdf"]
    into = io.BytesIO()
    client.files.download(small.id, to=into)
    assert into.getvalue() == PDF

    with client.files.stream(big.id) as content:
        assert (content.name, content.content_type) == ("report.pdf", "application/pdf")
        assert (content.size, content.sha256) == (len(BIG_PDF), sha256(BIG_PDF))
        chunks = list(content)
    assert b"".join(chunks) == BIG_PDF
    assert max(len(chunk) for chunk in chunks) <= CHUNK


def test_a_file_object_is_sent_from_where_it_stands_and_one_that_cannot_seek_chunked(
    client: Client,
) -> None:
    form = file_form(client)
    opened = io.BytesIO(b"a preamble to skip" + PDF)
    opened.seek(len(b"a preamble to skip"))
    uploaded = client.files.upload(form.id, "cv", opened, name="from-here.pdf")
    assert (uploaded.size, uploaded.sha256) == (len(PDF), sha256(PDF))

    piped = Pipe(BIG_PDF)
    uploaded = client.files.upload(form.id, "cv", piped, name="piped.pdf")
    assert (uploaded.size, uploaded.sha256) == (len(BIG_PDF), sha256(BIG_PDF))
    # Read a chunk at a time, never whole.
    assert len(piped.asked) == len(BIG_PDF) // CHUNK + 2  # the last read finds nothing
    assert set(piped.asked) == {CHUNK}


class Pipe:
    """A binary stream that cannot seek (a pipe, a socket): it records each read."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.asked: list[int] = []

    def read(self, size: int = -1, /) -> bytes:
        self.asked.append(size)
        return self._data.read(size)

    def seekable(self) -> bool:
        return False


def test_a_signed_link_downloads_the_file_without_a_key_until_it_expires(
    client: Client, live: Live
) -> None:
    form = file_form(client)
    uploaded = client.files.upload(form.id, "cv", PDF, name="cv.pdf")
    before = datetime.now(UTC)

    link = client.files.link(uploaded.id, expires_in=timedelta(minutes=2))
    assert before + timedelta(seconds=119) <= link.expires_at
    assert link.expires_at <= datetime.now(UTC) + timedelta(seconds=121)
    assert client.files.link(uploaded.id).expires_at >= before + timedelta(minutes=59)

    # `formsapi serve` without FORMSAPI_PUBLIC_URL: links lead where it listens.
    assert link.url.startswith(f"{live.base_url}/files/{uploaded.id}?")
    keyless = httpx.get(link.url)
    assert (keyless.status_code, keyless.content) == (200, PDF)

    with pytest.raises(ValidationFailed) as too_long:
        client.files.link(uploaded.id, expires_in=timedelta(days=8))
    assert [e.pointer for e in too_long.value.errors] == ["/expiresIn"]


def test_refused_uploads_are_typed_errors(client: Client) -> None:
    form = file_form(client)
    with pytest.raises(UnsupportedMediaType) as wrong_type:
        client.files.upload(form.id, "cv", PNG, name="photo.png")
    assert wrong_type.value.extensions["contentType"] == "image/png"
    with pytest.raises(PayloadTooLarge) as too_large:
        client.files.upload(form.id, "cv", b"%PDF-1.7\n" + bytes(4 * 1024 * 1024))
    assert too_large.value.extensions["limit"] == 4 * 1024 * 1024
    with pytest.raises(BadRequest) as no_question:
        client.files.upload(form.id, "name", PDF)
    assert [p.name for p in no_question.value.invalid_params] == ["question"]
    with pytest.raises(FileNotFoundError):
        client.files.upload(form.id, "cv", "no/such/file.pdf")
    with pytest.raises(TypeError, match="binary mode"):
        client.files.upload(form.id, "cv", io.StringIO("%PDF-1.7"))  # type: ignore[arg-type]


def test_an_upload_that_may_have_reached_the_service_is_never_sent_again(
    client: Client, live: Live, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="formsapi_client")
    form = file_form(client)
    source = tmp_path / "cv.pdf"
    source.write_bytes(PDF)
    with Proxy(live.base_url).running() as proxy:
        proxy.plans = ["lose"]
        with (
            Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy,
            pytest.raises(ConnectionFailed),
        ):
            lossy.files.upload(form.id, "cv", source)
        assert proxy.connections == 1

        # A 503 with Retry-After says nothing was done: a path is read again
        # from its start, and uploaded once, whole.
        proxy.plans = [busy("503 Service Unavailable", "Retry-After: 0")]
        with Client(proxy.url, live.secret, max_retry_wait=1) as behind:
            again = behind.files.upload(form.id, "cv", source)
        assert proxy.connections == 3
        assert (again.size, again.sha256) == (len(PDF), sha256(PDF))

        # But a stream that cannot seek has given its bytes to the first attempt.
        proxy.plans = [busy("503 Service Unavailable", "Retry-After: 0")]
        with (
            Client(proxy.url, live.secret, max_retry_wait=1) as behind,
            pytest.raises(ServiceUnavailable),
        ):
            behind.files.upload(form.id, "cv", Pipe(PDF))
        assert proxy.connections == 4

        # A link stores nothing: asked again after a lost answer.
        proxy.plans = ["lose"]
        with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
            assert "signature=" in lossy.files.link(again.id).url
        assert proxy.connections == 6
    retried = [r.getMessage() for r in caplog.records if r.name == "formsapi_client"]
    assert len(retried) == 2


def test_a_download_cut_short_raises_and_leaves_no_file(
    client: Client, live: Live, tmp_path: Path
) -> None:
    form = file_form(client)
    uploaded = client.files.upload(form.id, "cv", BIG_PDF, name="big.pdf")
    target = tmp_path / "big.pdf"
    with Proxy(live.base_url).running() as proxy:
        proxy.plans = [("cut", 100_000)]
        with (
            Client(proxy.url, live.secret) as lossy,
            pytest.raises(ConnectionFailed),
        ):
            lossy.files.download(uploaded.id, to=target)
    assert list(tmp_path.iterdir()) == []


def test_bytes_other_than_the_file_s_are_refused() -> None:
    # What a proxy that rewrote the body would deliver: the ETag still the file's.
    response = httpx.Response(
        200,
        headers={"ETag": f'"{sha256(PDF)}"', "Content-Length": str(len(PDF))},
        request=httpx.Request("GET", "http://127.0.0.1/v1/files/fil_1/content"),
    )
    received = Received(response)
    received.feed(PDF[:-1] + b"!")
    with pytest.raises(UnreadableResponse, match="SHA-256"):
        received.finish()


async def test_the_async_client_uploads_downloads_and_links(
    client: Client, live: Live, tmp_path: Path
) -> None:
    form = file_form(client)
    source = tmp_path / "report.pdf"
    source.write_bytes(BIG_PDF)
    async with AsyncClient(live.base_url, live.secret) as files:
        from_path = await files.files.upload(form.id, "cv", source)
        with source.open("rb") as opened:
            from_file = await files.files.upload(form.id, "cv", opened, name="opened.pdf")
        from_bytes = await files.files.upload(form.id, "cv", PDF, name="small.pdf")
        assert (from_path.name, from_path.sha256) == ("report.pdf", sha256(BIG_PDF))
        assert (from_file.name, from_file.sha256) == ("opened.pdf", sha256(BIG_PDF))
        assert (await files.files.get(from_bytes.id)).size == len(PDF)

        copy = tmp_path / "copy.pdf"
        await files.files.download(from_path.id, to=copy)
        assert copy.read_bytes() == BIG_PDF
        async with files.files.stream(from_bytes.id) as content:
            assert content.name == "small.pdf"
            assert b"".join([chunk async for chunk in content]) == PDF
        link = await files.files.link(from_file.id, expires_in=60)
        assert link.url.startswith("http")
