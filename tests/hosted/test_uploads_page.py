"""File questions on the hosted page, driven as a browser would (the page's
script sends each file to /f/{formId}/files, then the page posts the id its
hidden field holds): what the upload answers, what the post stores, what a
page shown again shows, the throttle on a flood of uploads, and an upload a
saved partial names outliving the purge of uploads nobody took."""

import asyncio
import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db import create_write_sessionmaker
from formsapi.file import service as file_service
from formsapi.file.storage import Storages
from formsapi.kit.time import shift
from formsapi.models import File
from formsapi.ratelimit.service import UploadThrottle
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.factories import publish_over_api
from tests.file.test_uploads import PDF
from tests.hosted.test_logic_pages import _hidden
from tests.partial.test_partials import _link

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
            "maxSize": 4096,
        },
    ],
    "translations": {
        "fr": {
            "title": "Candidature",
            "blocks": {"name": {"title": "Votre nom"}, "cv": {"title": "Votre CV"}},
            "messages": {"send": "Envoyer", "required": "est obligatoire"},
        }
    },
}

# Page 1 asks the name; page 2 the CV, where a respondent saves and comes back.
PAGED: dict[str, Any] = {
    "title": "Apply",
    "blocks": [
        FORM["blocks"][0],
        {"type": "page_break", "key": "documents"},
        FORM["blocks"][1],
        {"type": "email", "key": "email", "title": "Your email", "required": True},
    ],
    "resumeDays": 7,
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    # The throttles count in this app's memory (no Redis): one test's uploads
    # never count against another's. The page's posts a minute are lifted, so
    # the uploads' own allowance is what stops a flood here.
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        public_posts_per_ip=100_000,
        public_url="https://forms.test",
    )


async def _upload(
    client: Api | httpx.AsyncClient,
    form_id: str,
    data: bytes = PDF,
    name: str = "cv.pdf",
    key: str = "cv",
) -> httpx.Response:
    """What the page's script sends: the file as it is, its name in the query."""
    return await client.post(
        f"/f/{form_id}/files", params={"question": key, "name": name}, content=data
    )


def _posted(page: str, fields: dict[str, str], go: str = "next") -> dict[str, list[str]]:
    """What the browser posts from `page`: its hidden inputs, with `fields`
    in place of those the script fills (a file question's hidden field) or
    beside them, and the button pressed."""
    posted: dict[str, list[str]] = {}
    for name, value in _hidden(page):
        posted.setdefault(name, []).append(value)
    for name, value in fields.items():
        posted[name] = [value]
    posted["_go"] = [go]
    return posted


async def _files(engine: AsyncEngine) -> list[File]:
    async with create_write_sessionmaker(engine)() as session:
        rows = await session.scalars(unscoped(select(File), "a test reads every file"))
        return list(rows)


async def _count(engine: AsyncEngine) -> int:
    async with create_write_sessionmaker(engine)() as session:
        counted = await session.scalar(
            unscoped(select(func.count()).select_from(File), "a test counts every file")
        )
    return int(counted or 0)


async def test_the_page_of_a_form_with_a_file_question_renders_the_file_field(
    api: Api, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)

    page = await api.get(f"/f/{form_id}")

    assert page.status_code == 200
    text = page.text
    assert '<label for="field-cv">Your CV <span class="required"' in text
    # The picker has no name: the file goes by the script, its id by the hidden field.
    [picker] = re.findall(r'<input type="file"[^>]*>', text)
    assert 'id="field-cv"' in picker
    assert "name=" not in picker
    assert 'accept="application/pdf"' in picker
    assert "multiple" not in picker  # one file at most
    assert 'aria-describedby="cv-limits"' in picker
    assert ("cv", "") in _hidden(text)
    assert f'data-upload="/f/{form_id}/files?question=cv"' in text
    assert 'data-max-size="4096"' in text
    assert '<p class="hint" id="cv-limits">One file, 4.1 kB at most.</p>' in text
    assert '<p class="upload-status" role="status"></p>' in text
    assert "Uploading files needs JavaScript to be on." in text  # in <noscript>


async def test_an_upload_answers_201_with_its_id_name_size_and_type_only(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, _, org_id = await publish_over_api(api, session, FORM)

    uploaded = await _upload(api, form_id, name="Ada Lovelace CV.pdf")

    assert uploaded.status_code == 201, uploaded.text
    assert uploaded.headers["content-type"] == "application/json"
    body = uploaded.json()
    assert set(body) == {"id", "name", "size", "contentType"}
    assert body["id"].startswith("fil_")
    assert body["name"] == "Ada Lovelace CV.pdf"
    assert body["size"] == len(PDF)
    assert body["contentType"] == "application/pdf"
    # Nothing of the owner's: not their organization, nor where the API serves the file.
    assert org_id not in uploaded.text
    assert "/v1/" not in uploaded.text
    [row] = await _files(engine)
    assert (row.id, row.form_id, row.submission_id) == (body["id"], form_id, None)


async def test_the_page_posted_with_the_uploads_id_makes_a_submission_that_owns_the_file(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    page = await api.get(f"/f/{form_id}")
    file_id = (await _upload(api, form_id)).json()["id"]

    posted = await api.post(
        f"/f/{form_id}", data=_posted(page.text, {"name": "Ada", "cv": file_id})
    )

    assert posted.status_code == 303, posted.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"name": "Ada", "cv": file_id}
    about = (await api.get(f"/v1/files/{file_id}", secret)).json()
    assert about["submissionId"] == stored["id"]
    assert about["question"] == "cv"
    content = await api.get(f"/v1/files/{file_id}/content", secret)
    assert content.content == PDF


async def test_a_page_shown_again_with_errors_names_the_upload_not_its_id(
    api: Api, session: AsyncSession
) -> None:
    form_id, _, _ = await publish_over_api(api, session, FORM)
    page = await api.get(f"/f/{form_id}")
    file_id = (await _upload(api, form_id, name="Ada <b>CV.pdf")).json()["id"]

    again = await api.post(f"/f/{form_id}", data=_posted(page.text, {"name": "", "cv": file_id}))

    assert again.status_code == 422
    text = again.text
    assert '<p class="error" id="name-error">is required</p>' in text
    assert 'id="cv-error"' not in text
    # Listed by its name (escaped) and size, with its id kept for the next post.
    assert f'<li data-id="{file_id}">Ada &lt;b&gt;CV.pdf (1.4 kB) <button' in text
    assert "<b>CV" not in text
    assert ("cv", file_id) in _hidden(text)
    assert f">{file_id}" not in text  # the id is never the text shown

    # Another form's upload, named in this page's field: neither its name
    # nor anything of it shown, and the answer refused.
    other_id, _, _ = await publish_over_api(api, session, FORM)
    elsewhere = (await _upload(api, other_id, name="someone-elses.pdf")).json()["id"]
    refused = await api.post(
        f"/f/{form_id}", data=_posted(page.text, {"name": "Eve", "cv": elsewhere})
    )
    assert refused.status_code == 422
    assert "someone-elses.pdf" not in refused.text
    assert 'id="cv-error"' in refused.text


@pytest.mark.parametrize(("lang", "required"), [("en", "is required"), ("fr", "est obligatoire")])
async def test_a_required_file_question_without_an_upload_says_required_in_the_pages_words(
    api: Api, session: AsyncSession, engine: AsyncEngine, lang: str, required: str
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    page = await api.get(f"/f/{form_id}?lang={lang}")

    missing = await api.post(f"/f/{form_id}", data=_posted(page.text, {"name": "Ada"}))

    assert missing.status_code == 422
    text = missing.text
    assert f'<p class="error" id="cv-error">{required}</p>' in text
    title = "Votre CV" if lang == "fr" else "Your CV"
    assert f'<a href="#field-cv">{title}: {required}</a>' in text
    [picker] = re.findall(r'<input type="file"[^>]*>', text)
    assert 'aria-invalid="true"' in picker
    assert 'aria-describedby="cv-limits cv-error"' in picker
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    assert await _count(engine) == 0


async def test_a_flood_of_tiny_uploads_from_one_address_stops_at_the_allowance(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    """10,000 tiny uploads from one address: the first refusals prove the
    rest, each refused before a byte is read. Sent in concurrent bursts, so
    the allowance is taken atomically, not read then written."""
    form_id, _, _ = await publish_over_api(api, session, FORM)
    allowance = UploadThrottle.PER_ADDRESS.amount
    tiny = b"%PDF-1.4\n"
    app = create_app(settings)

    def client(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://testserver")

    statuses: list[int] = []
    refusals: list[httpx.Response] = []
    try:
        async with client("203.0.113.7") as flood, client("198.51.100.2") as neighbour:
            while len(refusals) < 25:
                burst = await asyncio.gather(*(_upload(flood, form_id, tiny) for _ in range(25)))
                odd = [r for r in burst if r.status_code not in (201, 429)]
                assert not odd, (odd[0].status_code, odd[0].text)
                statuses += [r.status_code for r in burst]
                refusals += [r for r in burst if r.status_code == 429]
                assert await _count(engine) <= allowance
                assert len(statuses) <= 10_000
            other = await _upload(neighbour, form_id, tiny)
    finally:
        await release(app)

    assert statuses.count(201) == allowance, statuses
    assert set(statuses) == {201, 429}
    assert statuses[-25:] == [429] * 25  # refused, and stays refused
    for refused in refusals:
        assert refused.headers["content-type"] == "application/problem+json"
        wait = int(refused.headers["retry-after"])
        assert 1 <= wait <= 3600
    # Another address is not held back by this one's flood.
    assert other.status_code == 201, other.text
    assert await _count(engine) == allowance + 1


async def test_an_upload_to_a_closed_unknown_or_draft_form_is_refused_and_leaves_nothing(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    closed = await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "closed"})
    assert closed.status_code == 200, closed.text
    draft = (await api.post("/v1/forms", secret, json=FORM)).json()["id"]

    to_closed = await _upload(api, form_id)
    assert to_closed.status_code == 409
    assert to_closed.headers["content-type"] == "application/problem+json"
    assert to_closed.json()["formStatus"] == "closed"
    for missing in ("frm_" + "0" * 26, "nope", draft):
        refused = await _upload(api, missing)
        assert refused.status_code == 404, (missing, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    # A published form's question it does not have, and bytes it does not take.
    reopened = await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    assert reopened.status_code == 200, reopened.text
    assert (await _upload(api, form_id, key="nope")).status_code == 400
    assert (await _upload(api, form_id, b"\x89PNG\r\n\x1a\n" + b"\0" * 64)).status_code == 415
    assert (await _upload(api, form_id, PDF + b"\0" * 4096)).status_code == 413
    assert await _count(engine) == 0


async def test_an_upload_a_saved_partial_names_outlives_the_orphan_purge_and_shows_on_resume(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, PAGED)
    url = f"/f/{form_id}"
    first = await api.get(url)
    second = await api.post(url, data=_posted(first.text, {"name": "Ada"}))
    assert "Page 2 of 2" in second.text
    kept = (await _upload(api, form_id, name="cv.pdf")).json()["id"]
    orphan = (await _upload(api, form_id, name="picked-then-removed.pdf")).json()["id"]

    saved = await api.post(url, data=_posted(second.text, {"cv": kept}, go="save"))
    assert saved.status_code == 200, saved.text
    link = _link(saved.text)

    sessionmaker = create_write_sessionmaker(engine)
    storages = Storages(settings, sessionmaker, sessionmaker)  # type: ignore[arg-type]
    with shift(timedelta(hours=settings.upload_orphan_hours, minutes=1)):
        assert await file_service.purge(sessionmaker, storages) == 1  # the one nobody named
        assert [f.id for f in await _files(engine)] == [kept]
        assert (await api.get(f"/v1/files/{orphan}", secret)).status_code == 404

        resumed = await api.get(link)
        assert resumed.status_code == 200
        assert "Page 2 of 2" in resumed.text
        assert f'<li data-id="{kept}">cv.pdf (' in resumed.text
        assert ("cv", kept) in _hidden(resumed.text)

        done = await api.post(url, data=_posted(resumed.text, {"email": "ada@example.com"}))
        assert done.status_code == 303, done.text

    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"name": "Ada", "cv": kept, "email": "ada@example.com"}
    about = (await api.get(f"/v1/files/{kept}", secret)).json()
    assert about["submissionId"] == stored["id"]
    assert (await api.get(f"/v1/files/{kept}/content", secret)).content == PDF
    # Taken: no later purge removes it.
    with shift(timedelta(days=30)):
        assert await file_service.purge(sessionmaker, storages) == 0
