"""File questions on the hosted page, driven as a browser would (the page's
script sends each file to /f/{formId}/files, then the page posts the id its
hidden field holds): what the upload answers, what the post stores, what a
page shown again shows, the throttle on a flood of uploads, the bytes an
address or a form may upload and a form may hold unnamed, and an upload a
saved partial names outliving the purge of uploads nobody took."""

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.file import service as file_service
from formsapi.file.storage import Storages
from formsapi.kit.time import shift
from formsapi.models import File
from formsapi.ratelimit.service import UploadThrottle
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.file.test_uploads import PDF
from tests.hosted.test_logic_pages import _hidden
from tests.partial.test_partials import _link
from tests.support.factories import publish_over_api

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


# Bytes: anonymous uploads are bounded by what they weigh, not only by count.

MIB = 1024 * 1024
# A form whose question takes files up to 4 MiB.
LARGE: dict[str, Any] = {
    "title": "Portfolio",
    "blocks": [
        {
            "type": "file",
            "key": "cv",
            "title": "Your work",
            "accept": ["application/pdf"],
            "maxSize": 4 * MIB,
        }
    ],
}
ONE_MIB = PDF + b"\0" * (MIB - len(PDF))


class Declared:
    """An upload's body, sent with its Content-Length (as a browser sends
    a file): whether the server read any of it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.read = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.read = True
        yield self.data


async def _declared(
    client: httpx.AsyncClient, form_id: str, body: Declared, length: int | None = None
) -> httpx.Response:
    return await client.post(
        f"/f/{form_id}/files",
        params={"question": "cv", "name": "work.pdf"},
        content=body,
        headers={"Content-Length": str(len(body.data) if length is None else length)},
    )


@contextlib.asynccontextmanager
async def _clients(
    database_url: str,
    *addresses: str,
    servers: int = 1,
    redis_url: str | None = None,
    **limits: Any,
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Clients from `addresses`, the n-th on the (n % `servers`)-th of apps
    whose upload limits are `limits`, sharing `redis_url` when given (as
    processes of one deployment do), else each counting in its memory."""
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=f"formsapi-test-{uuid.uuid4().hex}",
        rate_limit_standard=100_000,
        public_posts_per_ip=100_000,
        **limits,
    )
    apps = [create_app(settings) for _ in range(servers)]
    try:
        async with contextlib.AsyncExitStack() as stack:
            yield [
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        transport=httpx.ASGITransport(
                            app=apps[n % servers], client=(address, 40000)
                        ),
                        base_url="http://testserver",
                    )
                )
                for n, address in enumerate(addresses)
            ]
    finally:
        for app in apps:
            await release(app)


async def _held(engine: AsyncEngine) -> int:
    """Bytes the files table says it holds."""
    return sum(file.size for file in await _files(engine))


def _refused_unread(response: httpx.Response, body: Declared, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert 1 <= int(response.headers["retry-after"]) <= 24 * 3600
    assert not body.read  # refused on its headers: not a byte of it read


@pytest.mark.parametrize("store", ["memory", "redis"])
async def test_uploads_from_one_address_stop_at_its_bytes_whatever_the_form(
    api: Api,
    session: AsyncSession,
    engine: AsyncEngine,
    database_url: str,
    request: pytest.FixtureRequest,
    store: str,
) -> None:
    """3 MiB from an address (in the time unnamed uploads are kept): a flood
    of 1 MiB files into two forms, in a concurrent burst, stores 3 MiB; the
    rest are refused unread. With Redis, through two processes that share
    its count."""
    forms = [(await publish_over_api(api, session, LARGE))[0] for _ in range(2)]
    shared: dict[str, Any] = {}
    if store == "redis":
        shared = {"servers": 2, "redis_url": request.getfixturevalue("redis_url")}
    async with _clients(
        database_url,
        "203.0.113.7",
        "203.0.113.7",
        "198.51.100.2",
        upload_bytes_per_ip=3 * MIB,
        **shared,
    ) as (flood, flood_elsewhere, neighbour):
        # Larger than the whole allowance: refused at once, and takes nothing.
        whole = Declared(PDF + b"\0" * (3 * MIB))
        too_large = await _declared(flood, forms[0], whole)
        assert too_large.status_code == 413, too_large.text
        assert not whole.read

        bodies = [Declared(ONE_MIB) for _ in range(12)]
        answers = await asyncio.gather(
            *(
                _declared((flood, flood_elsewhere)[n % 2], forms[n // 2 % 2], body)
                for n, body in enumerate(bodies)
            )
        )
        other = await _declared(neighbour, forms[0], Declared(ONE_MIB))

    assert sorted(r.status_code for r in answers) == [201] * 3 + [429] * 9
    for response, body in zip(answers, bodies, strict=True):
        if response.status_code == 429:
            _refused_unread(response, body, 429)
            assert "from this address" in response.json()["detail"]
    assert other.status_code == 201, other.text  # another address is not held back
    assert await _held(engine) == 4 * MIB


async def test_uploads_into_one_form_stop_at_its_bytes_an_hour_whatever_the_address(
    api: Api, session: AsyncSession, engine: AsyncEngine, database_url: str
) -> None:
    """3 MiB an hour into a form: 1 MiB files from 8 addresses at once store
    3 MiB; another form takes its own."""
    form_id, _, _ = await publish_over_api(api, session, LARGE)
    other_form, _, _ = await publish_over_api(api, session, LARGE)
    addresses = [f"203.0.113.{n}" for n in range(1, 9)]
    async with _clients(database_url, *addresses, upload_bytes_per_form=3 * MIB) as clients:
        bodies = [Declared(ONE_MIB) for _ in clients]
        answers = await asyncio.gather(
            *(_declared(c, form_id, b) for c, b in zip(clients, bodies, strict=True))
        )
        elsewhere = await _declared(clients[-1], other_form, Declared(ONE_MIB))

    assert sorted(r.status_code for r in answers) == [201] * 3 + [429] * 5
    for response, body in zip(answers, bodies, strict=True):
        if response.status_code == 429:
            _refused_unread(response, body, 429)
            assert "to this form" in response.json()["detail"]
    assert elsewhere.status_code == 201, elsewhere.text
    assert await _held(engine) == 4 * MIB


async def test_a_form_holds_uploads_no_answers_name_up_to_its_room(
    api: Api, session: AsyncSession, engine: AsyncEngine, database_url: str, settings: Settings
) -> None:
    """3 MiB of uploads no submission names, in a form: from 10 addresses at
    once, 3 MiB are kept, the rest refused unread (507); room comes back as
    a submission takes a file, and as unnamed uploads expire."""
    form_id, secret, _ = await publish_over_api(api, session, LARGE)
    other_form, _, _ = await publish_over_api(api, session, LARGE)
    addresses = [f"198.51.100.{n}" for n in range(1, 11)]
    async with _clients(database_url, *addresses, upload_orphan_bytes_per_form=3 * MIB) as (
        clients
    ):
        bodies = [Declared(ONE_MIB) for _ in clients]
        answers = await asyncio.gather(
            *(_declared(c, form_id, b) for c, b in zip(clients, bodies, strict=True))
        )
        assert sorted(r.status_code for r in answers) == [201] * 3 + [507] * 7
        for response, body in zip(answers, bodies, strict=True):
            if response.status_code == 507:
                _refused_unread(response, body, 507)
                assert response.json()["type"] == "/problems/uploads-full"
        assert await _held(engine) == 3 * MIB
        # Another form has room of its own.
        assert (await _declared(clients[0], other_form, Declared(ONE_MIB))).status_code == 201

        # A submission names one: its room is free again, for one file.
        kept = next(r.json()["id"] for r in answers if r.status_code == 201)
        sent = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"cv": kept}}
        )
        assert sent.status_code == 201, sent.text
        assert (await _declared(clients[1], form_id, Declared(ONE_MIB))).status_code == 201
        assert (await _declared(clients[2], form_id, Declared(ONE_MIB))).status_code == 507

        # Unnamed uploads past their time hold no room, purged or not yet.
        with shift(timedelta(hours=settings.upload_orphan_hours, minutes=1)):
            late = await _declared(clients[3], form_id, Declared(ONE_MIB))
        assert late.status_code == 201, late.text


async def test_an_upload_whose_body_runs_past_its_declared_length_is_cut_and_leaves_nothing(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    """What an upload declares is what its allowances were charged: a body
    longer than that (which HTTP/1.1's framing never delivers, but another
    transport might) is refused, not kept."""
    form_id, _, _ = await publish_over_api(api, session, FORM)

    longer = await _declared(api.client, form_id, Declared(PDF), length=100)

    assert longer.status_code == 413, longer.text
    assert await _count(engine) == 0
