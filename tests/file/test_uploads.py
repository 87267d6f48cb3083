"""Uploads to file questions over the API: streamed into the storage, typed
by their bytes, named by answers, downloaded with a key or a signed link,
deleted with their submission, purged when no submission takes them; and
every hostile upload a clear 4xx that leaves nothing behind."""

import asyncio
import hashlib
import io
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.file import service as file_service
from formsapi.file.storage import CHUNK, Storages
from formsapi.kit.time import shift, utcnow
from formsapi.models import File, FileChunk
from formsapi.partial import service as partial_service
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.support.factories import publish_over_api
from tests.support.stalled import StalledBody, started

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
PDF = b"%PDF-1.7\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 40

FORM: dict[str, Any] = {
    "title": "Apply",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {
            "type": "file",
            "key": "cv",
            "title": "Your CV",
            "required": True,
            "accept": ["application/pdf"],
            "maxSize": 2 * 1024 * 1024,
        },
        {
            "type": "file",
            "key": "photos",
            "title": "Photos",
            "accept": ["image/*"],
            "maxFiles": 3,
            "maxSize": 4096,
        },
    ],
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        secret_key=["k" * 40],
        upload_idle_timeout=0.5,
        public_url="https://forms.test",
    )


async def _upload(
    api: Api, secret: str, form_id: str, key: str, data: Any, name: str = "f", **headers: str
) -> Any:
    return await api.post(
        f"/v1/forms/{form_id}/files",
        secret,
        params={"question": key, "name": name},
        content=data,
        headers=headers,
    )


async def _counts(engine: AsyncEngine) -> tuple[int, int]:
    async with create_write_sessionmaker(engine)() as session:
        files = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
        chunks = await session.scalar(select(func.count()).select_from(FileChunk))
    return int(files or 0), int(chunks or 0)


async def test_a_file_uploaded_then_named_by_an_answer_belongs_to_that_submission(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    # Over three database chunks, so pieces are split and put back in order.
    cv = PDF + bytes(range(256)) * (3 * CHUNK // 256 + 7)

    uploaded = await _upload(api, secret, form_id, "cv", cv, name="Ada Lovelace CV.pdf")
    assert uploaded.status_code == 201, uploaded.text
    file = uploaded.json()
    assert file["name"] == "Ada Lovelace CV.pdf"
    assert file["contentType"] == "application/pdf"
    assert file["size"] == len(cv)
    assert file["sha256"] == hashlib.sha256(cv).hexdigest()
    assert file["submissionId"] is None

    sent = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "cv": file["id"]}},
    )
    assert sent.status_code == 201, sent.text
    assert sent.json()["answers"]["cv"] == file["id"]  # the wire value is the id

    about = (await api.get(f"/v1/files/{file['id']}", secret)).json()
    assert about["submissionId"] == sent.json()["id"]
    download = await api.get(f"/v1/files/{file['id']}/content", secret)
    assert download.status_code == 200
    assert download.content == cv
    assert download.headers["content-type"] == "application/pdf"
    assert download.headers["content-disposition"].startswith("attachment;")
    assert download.headers["x-content-type-options"] == "nosniff"

    # Taken once: another submission cannot name it.
    again = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Eve", "cv": file["id"]}},
    )
    assert again.status_code == 422
    assert again.json()["errors"][0]["pointer"] == "/answers/cv"


async def test_several_files_answer_one_question_joined_by_commas(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    cv = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    photos = [(await _upload(api, secret, form_id, "photos", PNG)).json()["id"] for _ in range(2)]

    sent = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "cv": cv, "photos": ",".join(photos)}},
    )

    assert sent.status_code == 201, sent.text
    for photo in photos:
        assert (await api.get(f"/v1/files/{photo}", secret)).json()["submissionId"]


async def test_an_answer_naming_a_file_of_another_question_or_none_is_refused(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    photo = (await _upload(api, secret, form_id, "photos", PNG)).json()["id"]
    other_form, other_secret, _ = await publish_over_api(api, session, FORM)
    elsewhere = (await _upload(api, other_secret, other_form, "cv", PDF)).json()["id"]

    for cv in (photo, elsewhere, "fil_" + "0" * 26, "not-an-id"):
        sent = await api.post(
            f"/v1/forms/{form_id}/submissions",
            secret,
            json={"answers": {"name": "Ada", "cv": cv}},
        )
        assert sent.status_code == 422, (cv, sent.text)
        assert [e["pointer"] for e in sent.json()["errors"]] == ["/answers/cv"]

    # Another organization's file answers as a missing one does.
    assert (await api.get(f"/v1/files/{elsewhere}", secret)).status_code == 404
    assert (await api.get(f"/v1/files/{elsewhere}/content", secret)).status_code == 404


async def test_the_type_is_the_bytes_not_the_name_nor_the_declared_type(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    # A PDF that says it is a PNG, for a question that takes images.
    lying = await _upload(
        api, secret, form_id, "photos", PDF, name="cat.png", **{"Content-Type": "image/png"}
    )
    assert lying.status_code == 415
    assert lying.json()["contentType"] == "application/pdf"

    # A zip bomb named .png: a zip by its bytes, never opened.
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.bin", b"\x00" * 20_000_000)
    bomb = await _upload(api, secret, form_id, "cv", packed.getvalue(), name="holiday.png")
    assert bomb.status_code == 415
    assert bomb.json()["contentType"] == "application/zip"

    # A real PNG named .exe is a PNG.
    png = await _upload(api, secret, form_id, "photos", PNG, name="setup.exe")
    assert png.status_code == 201
    assert png.json()["contentType"] == "image/png"

    assert await _counts(engine) == (1, 1)


async def test_a_name_keeps_neither_path_nor_control_characters(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    uploaded = await _upload(
        api, secret, form_id, "cv", PDF, name="../../etc/\x00pass\x1b[31mwd\u202e.pdf"
    )

    assert uploaded.status_code == 201
    assert uploaded.json()["name"] == "pass[31mwd.pdf"
    download = await api.get(f"/v1/files/{uploaded.json()['id']}/content", secret)
    assert "/" not in download.headers["content-disposition"].split("filename*")[0]


async def test_an_upload_over_the_limit_is_refused_and_leaves_nothing(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    over = PNG + b"\x00" * 4096

    # Said up front by its length: refused before a byte is read.
    declared = await _upload(api, secret, form_id, "photos", over)
    assert declared.status_code == 413

    # Sent without a length, in pieces: cut where it runs over.
    async def pieces() -> Any:
        for start in range(0, len(over), 1000):
            yield over[start : start + 1000]

    streamed = await _upload(api, secret, form_id, "photos", pieces())
    assert streamed.status_code == 413
    empty = await _upload(api, secret, form_id, "photos", b"")
    assert empty.status_code == 422
    assert await _counts(engine) == (0, 0)


async def test_an_upload_that_never_finishes_answers_408_and_leaves_nothing(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    body = StalledBody(PDF + b"\x00" * CHUNK)  # a chunk in, then nothing more

    sending = asyncio.create_task(
        api.client.post(
            f"/v1/forms/{form_id}/files",
            params={"question": "cv"},
            content=body,
            headers={"Authorization": f"Bearer {secret}"},
        )
    )
    await started(body)
    response = await asyncio.wait_for(sending, timeout=30)

    assert response.status_code == 408
    assert await _counts(engine) == (0, 0)


async def test_a_deleted_submission_deletes_its_files(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    cv = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    photo = (await _upload(api, secret, form_id, "photos", PNG)).json()["id"]
    sent = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "cv": cv, "photos": photo}},
    )
    url = f"/v1/forms/{form_id}/submissions/{sent.json()['id']}"

    # An edit that drops a file deletes it.
    edited = await api.patch(url, secret, json={"answers": {"photos": None}})
    assert edited.status_code == 200, edited.text
    assert (await api.get(f"/v1/files/{photo}", secret)).status_code == 404
    assert (await api.delete(url, secret)).status_code == 204

    assert (await api.get(f"/v1/files/{cv}/content", secret)).status_code == 404
    assert await _counts(engine) == (0, 0)


async def test_uploads_no_submission_takes_are_purged_after_their_time(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    kept = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "A", "cv": kept}}
    )
    await _upload(api, secret, form_id, "cv", PDF)  # never named
    sessionmaker = create_write_sessionmaker(engine)
    storages = Storages(settings, sessionmaker, sessionmaker)  # type: ignore[arg-type]

    assert await file_service.purge(sessionmaker, storages) == 0
    with shift(timedelta(hours=settings.upload_orphan_hours, minutes=1)):
        assert await file_service.purge(sessionmaker, storages) == 1
        # Past its time, an upload cannot be named either.
        late = await _upload(api, secret, form_id, "cv", PDF)
    with shift(timedelta(hours=settings.upload_orphan_hours * 2, minutes=2)):
        sent = await api.post(
            f"/v1/forms/{form_id}/submissions",
            secret,
            json={"answers": {"name": "B", "cv": late.json()["id"]}},
        )
    assert sent.status_code == 422
    assert (await api.get(f"/v1/files/{kept}", secret)).status_code == 200


async def test_a_signed_link_downloads_without_a_key_until_it_expires(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    file_id = (await _upload(api, secret, form_id, "cv", PDF, name="cv.pdf")).json()["id"]

    made = await api.post(f"/v1/files/{file_id}/links", secret, json={"expiresIn": 600})
    assert made.status_code == 201, made.text
    link = made.json()["url"]
    assert link.startswith(f"https://forms.test/files/{file_id}?")
    path = link.removeprefix("https://forms.test")

    fetched = await api.get(path)
    assert fetched.status_code == 200
    assert fetched.content == PDF
    tampered = await api.get(path.replace("expires=", "expires=9"))
    assert tampered.status_code == 403
    # Malformed: a clear 4xx, never a 500, nothing of the file.
    file_path = f"/files/{file_id}"
    for query, status in [
        ("expires=soon&signature=x", 403),
        ("expires=1e9&signature=x", 403),
        ("expires=99999999999&signature=" + "A" * 43, 403),
        ("expires=9999999999999&signature=x", 400),  # over 12 digits
        ("expires=99999999999", 400),  # no signature
        ("signature=x" * 10, 400),
    ]:
        malformed = await api.get(f"{file_path}?{query}")
        assert malformed.status_code == status, (query, malformed.text)
        assert malformed.headers["content-type"] == "application/problem+json"
    with shift(timedelta(seconds=601)):
        assert (await api.get(path)).status_code == 403

    too_long = await api.post(f"/v1/files/{file_id}/links", secret, json={"expiresIn": 10**8})
    assert too_long.status_code == 422
    reader_only = await api.post(f"/v1/files/{file_id}/links", secret, json={"expiresIn": 30})
    assert reader_only.status_code == 422  # under a minute


async def test_an_erased_partial_response_takes_its_uploads_with_it(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, FORM)
    cv = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    async with create_write_sessionmaker(engine)() as writing:
        await partial_service.save(
            writing, org_id, form_id, None, {"name": "Ada", "cv": cv}, 0, utcnow(), 7
        )
        await writing.commit()
    [partial] = (await api.get(f"/v1/forms/{form_id}/partials", secret)).json()["data"]

    erased = await api.delete(f"/v1/forms/{form_id}/partials/{partial['id']}", secret)

    assert erased.status_code == 204
    assert await _counts(engine) == (0, 0)


async def test_a_file_whose_bytes_were_lost_answers_404_not_a_broken_200(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    file_id = (await _upload(api, secret, form_id, "cv", PDF)).json()["id"]
    async with create_write_sessionmaker(engine)() as writing:
        await writing.execute(delete(FileChunk).where(FileChunk.file_id == file_id))
        await writing.commit()

    lost = await api.get(f"/v1/files/{file_id}/content", secret)

    assert lost.status_code == 404
    assert lost.headers["content-type"] == "application/problem+json"
