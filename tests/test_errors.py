"""Bad input answers a clear problem document, never a 500."""

import re
import uuid
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.errors import registry
from formsapi.kit.crypto import generate_secret
from formsapi.services import services_of
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org

SRC = Path(registry.__code__.co_filename).parent


@pytest.fixture
async def secret_and_form(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org)
    await session.commit()
    return secret, form.id


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("limit=0", ["limit"]),
        ("limit=101", ["limit"]),
        ("limit=-5", ["limit"]),
        ("limit=ten", ["limit"]),
        ("page=0", ["page"]),
        ("page=abc", ["page"]),
        ("page=99999999999999999999", ["page"]),
        ("since=garbage", ["since"]),
        ("since=2026-13-45", ["since"]),
        ("since=", ["since"]),
        ("limit=0&page=0&since=x", ["page", "limit", "since"]),
    ],
)
async def test_bad_parameters_are_400_naming_each_one(
    api: Api, secret_and_form: tuple[str, str], query: str, names: list[str]
) -> None:
    secret, form_id = secret_and_form
    paths = [f"/v1/forms/{form_id}/submissions?{query}"]
    if "since" not in query:
        paths.append(f"/v1/forms?{query}")
    for path in paths:
        response = await api.get(path, secret)

        assert response.status_code == 400, path
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["status"] == 400
        assert body["type"] == "/problems/invalid-parameters"
        assert sorted(p["name"] for p in body["invalidParams"]) == sorted(names)
        assert all(p["in"] == "query" and p["reason"] for p in body["invalidParams"])
        for name in names:
            assert f"'{name}'" in body["detail"]


async def test_get_without_content_type_is_fine(api: Api, secret_and_form: tuple[str, str]) -> None:
    secret, _ = secret_and_form

    response = await api.get("/v1/forms", secret)

    assert "content-type" not in response.request.headers
    assert response.status_code == 200


async def test_get_with_json_content_type_and_a_stray_body_is_fine(
    api: Api, secret_and_form: tuple[str, str]
) -> None:
    secret, form_id = secret_and_form
    for body in (b"", b"not json", b'{"a": 1}'):
        response = await api.client.request(
            "GET",
            f"/v1/forms/{form_id}",
            content=body,
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        )
        assert response.status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/nothing-here", 404),
        ("PUT", "/v1/forms", 405),
        ("DELETE", "/v1/forms", 405),
    ],
)
async def test_unknown_routes_and_methods_are_problems(
    api: Api, secret_and_form: tuple[str, str], method: str, path: str, status: int
) -> None:
    secret, _ = secret_and_form

    response = await api.client.request(
        method,
        path,
        content=b"{oops",
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )

    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == status


@pytest.mark.parametrize("method", ["HEAD", "PUT", "PATCH", "DELETE"])
async def test_a_method_a_forms_submissions_do_not_take_names_the_two_they_do(
    api: Api, secret_and_form: tuple[str, str], method: str
) -> None:
    """GET lists them, POST adds one: served by two routes, named together."""
    secret, form_id = secret_and_form
    path = f"/v1/forms/{form_id}/submissions"

    refused = await api.client.request(method, path, headers={"Authorization": f"Bearer {secret}"})

    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, POST"
    if method != "HEAD":
        assert refused.json()["status"] == 405
    assert (await api.get(path, secret)).status_code == 200


async def test_a_method_a_path_does_not_take_is_refused_naming_every_one_it_does(
    api: Api, secret_and_form: tuple[str, str]
) -> None:
    """A 405's Allow names every method the path takes, as the OpenAPI
    document does (RFC 9110), though several routes serve them: the router
    named only the first route it met (PUT /v1/forms answered `Allow: GET`)."""
    secret, _ = secret_and_form
    verbs = ("get", "post", "put", "patch", "delete")
    paths = api.contract.document["paths"]
    for template, operations in paths.items():
        documented = [verb.upper() for verb in verbs if verb in operations]
        path = re.sub(r"\{[^}]+\}", "x_1", template)
        # A method no template matching the path takes (DELETE .../submissions/changes
        # is a deletion of the submission "changes").
        taken = {
            verb
            for other, others in paths.items()
            if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", other), path)
            for verb in others
        }
        refused_with = next(verb.upper() for verb in verbs if verb not in taken)

        refused = await api.client.request(
            refused_with, path, headers={"Authorization": f"Bearer {secret}"}
        )

        assert refused.status_code == 405, (refused_with, template, refused.text)
        assert refused.headers["allow"] == ", ".join(documented), (refused_with, template)
        assert refused.json()["type"] == "/problems/method-not-allowed"


async def test_unknown_ids_are_404_and_ids_that_cannot_exist_400_never_500(
    api: Api, secret_and_form: tuple[str, str]
) -> None:
    secret, form_id = secret_and_form
    for unknown in ("x" * 64, "frm_nope"):
        for path in (f"/v1/forms/{unknown}", f"/v1/forms/{unknown}/submissions"):
            assert (await api.get(path, secret)).status_code == 404, path
    for odd in ("%00", "frm_%00", "frm_" + "é" * 20, "' OR 1=1 --", "x" * 65):
        for path in (
            f"/v1/forms/{odd}",
            f"/v1/forms/{odd}/submissions",
            f"/v1/forms/{form_id}/submissions/{odd}",
        ):
            response = await api.get(path, secret)
            assert response.status_code == 400, path
            assert response.json()["invalidParams"][0]["in"] == "path"


async def test_with_every_database_connection_busy_the_answer_is_503_to_retry(
    database_url: str, engine: AsyncEngine, secret_and_form: tuple[str, str]
) -> None:
    secret, form_id = secret_and_form
    app = create_app(
        Settings(database_url=database_url, database_pool_size=1, database_pool_timeout=0.2)
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
        services_of(app).engine.connect() as held,  # the pool's only connection
    ):
        await held.exec_driver_sql("SELECT 1")
        busy = await client.get(
            f"/v1/forms/{form_id}/submissions", headers={"Authorization": f"Bearer {secret}"}
        )
        ready = await client.get("/readyz")  # busy is not down: stay in rotation
        await held.close()
        freed = await client.get(
            f"/v1/forms/{form_id}/submissions", headers={"Authorization": f"Bearer {secret}"}
        )
    await release(app)

    assert busy.status_code == 503
    assert busy.headers["content-type"] == "application/problem+json"
    assert busy.headers["retry-after"] == "1"
    assert busy.json()["title"] == "Service Busy"
    assert ready.status_code == 200
    assert ready.json()["components"]["database"] == "busy"
    assert freed.status_code == 200


async def _reads_after_a_restart(
    database_url: str, redis_url: str, engine: AsyncEngine, secret: str, path: str
) -> list[httpx.Response]:
    """Three reads of `path` after one that succeeded (which caches the key),
    once PostgreSQL has closed every connection the app's pool holds, as a
    restart does."""
    app = create_app(
        Settings(
            database_url=database_url,
            database_pool_size=2,
            redis_url=redis_url,
            redis_prefix=f"test-{uuid.uuid4()}",
        )
    )
    transport = httpx.ASGITransport(app=app)
    auth = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        assert (await client.get(path, headers=auth)).status_code == 200
        async with engine.connect() as admin:
            await admin.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        after = [await client.get(path, headers=auth) for _ in range(3)]
    await release(app)
    return after


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_page_read_survives_the_database_closing_its_connections(
    database_url: str, redis_url: str, engine: AsyncEngine, secret_and_form: tuple[str, str]
) -> None:
    """The page query is the request's first statement (the key is cached), so
    it reconnects and runs again instead of failing."""
    secret, form_id = secret_and_form
    path = f"/v1/forms/{form_id}/submissions"
    after = await _reads_after_a_restart(database_url, redis_url, engine, secret, path)

    assert [r.status_code for r in after] == [200, 200, 200]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_reads_after_the_database_closed_its_connections_answer_503_then_200_never_500(
    database_url: str, redis_url: str, engine: AsyncEngine, secret_and_form: tuple[str, str]
) -> None:
    """Reads outside the hot path run through SQLAlchemy: the first to meet a
    dead connection cannot be replayed for it, but tells the client to retry,
    and the pool refreshes its other connections."""
    secret, form_id = secret_and_form
    after = await _reads_after_a_restart(
        database_url, redis_url, engine, secret, f"/v1/forms/{form_id}"
    )

    assert [r.status_code for r in after] == [503, 200, 200]
    assert after[0].headers["retry-after"] == "1"
    assert after[0].json()["type"].endswith("/database-unavailable")


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    "failure",
    [
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
        # What asyncio raises when every address of `localhost` refuses.
        OSError("Multiple exceptions: [Errno 111] ('::1', 5432), [Errno 111] ('127.0.0.1', 5432)"),
    ],
    ids=["starting-up", "out-of-slots", "every-address-refused"],
)
async def test_a_database_refusing_new_connections_answers_503(
    database_url: str,
    redis_url: str,
    session: AsyncSession,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
) -> None:
    """Page reads (on the driver), other reads (through SQLAlchemy) and writes
    all answer 503; only the reads invite a retry, since a write that lost its
    connection may have been saved."""
    org = await create_org(session)
    _, secret = await create_key(
        session, org, scopes=["forms:read", "submissions:read", "submissions:write"]
    )
    form_id = (await create_form(session, org)).id
    await session.commit()
    app = create_app(
        Settings(
            database_url=database_url, redis_url=redis_url, redis_prefix=f"test-{uuid.uuid4()}"
        )
    )
    transport = httpx.ASGITransport(app=app)
    auth = {"Authorization": f"Bearer {secret}"}
    page = f"/v1/forms/{form_id}/submissions"
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        assert (await client.get(page, headers=auth)).status_code == 200  # key now cached
        await services_of(app).engine.dispose()  # the next statement must connect

        async def refuse(*_: object, **__: object) -> None:
            raise failure

        monkeypatch.setattr(asyncpg, "connect", refuse)
        responses = [
            await client.get(page, headers=auth),
            await client.get(f"/v1/forms/{form_id}", headers=auth),
            await client.post(page, headers=auth, json={"answers": {}}),
        ]
        monkeypatch.undo()
    await release(app)

    assert [r.status_code for r in responses] == [503, 503, 503]
    assert all(r.json()["type"].endswith("/database-unavailable") for r in responses)
    assert [r.headers.get("retry-after") for r in responses] == ["1", "1", None]


async def test_a_database_that_cannot_be_reached_answers_503_with_retry_after() -> None:
    # Nothing listens on port 1: every connection attempt is refused.
    app = create_app(Settings(database_url="postgresql://postgres@127.0.0.1:1/none"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        key = {"Authorization": f"Bearer {generate_secret()}"}  # well formed: looked up
        response = await client.get("/v1/forms", headers=key)
    await release(app)

    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"
    assert response.json()["type"].endswith("/database-unavailable")


async def test_every_problem_type_uri_answers_with_a_page_about_it(api: Api) -> None:
    pages = {slug: await api.client.get(f"/problems/{slug}") for slug in registry()}
    framework = await api.client.get("/problems/http-405")
    unknown = await api.client.get("/problems/no-such-problem")

    for slug, page in pages.items():
        assert page.status_code == 200, slug
        assert page.headers["content-type"].startswith("text/html")
        assert registry()[slug].title in page.text
        assert f"/problems/{slug}" in page.text
    assert "Method Not Allowed" in framework.text
    assert unknown.status_code == 404
    # The slugs the handlers name outright are problem types with pages too.
    named = set(re.findall(r'slug="([a-z-]+)"', (SRC / "problems.py").read_text()))
    assert named <= set(registry())
