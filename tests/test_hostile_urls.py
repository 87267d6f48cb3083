"""Every field that takes a URL, an origin or a redirect target, fed the
shared table of hostile text (tests/support/hostile_text.py) in every part of a URL
(issue 25: a NUL in a webhook URL answered 500). For each field, one test
sends every case and collects what went wrong, so one run names every bad
character: never a 5xx; a refusal is the surface's own clear one (a problem
document pointing at the field, the page with its error, the hosted form
again with the error beside the field); and what is accepted is kept, and
comes back, without a raw control character.

Fields: the API's webhook endpoint `url` (POST and PATCH), `url` answers
(a submission's POST and PATCH) and a form's `embedOrigins` (PATCH); the
settings area's webhook URL, embed origins (the organization's and a
form's), the `next` of signing in and of switching organization, the sign-in
redirect's own target, and the Origin header every settings form is checked
by; the hosted form page's `url` answers."""

import re
from collections.abc import AsyncIterator, Iterator
from html import unescape
from itertools import count
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.app import release
from formsapi.config import Settings
from formsapi.kit import egress
from formsapi.models import Role
from tests.conftest import Api, app_on
from tests.support.contract import Contract
from tests.support.factories import create_form, create_key, create_org
from tests.support.hostile_text import (
    FORM,
    JSON,
    ORIGIN_PLACES,
    PATH_PLACES,
    TABLE,
    URL_PLACES,
    form_body,
    has_lone_surrogate,
    json_body,
    percent_encoded,
    placed_all,
    raw_control,
    url_cases,
)
from tests.web.conftest import (
    BASE_URL,
    PASSWORD,
    Browser,
    add_member,
    csrf_field,
    hidden_field,
)

MANAGE = ["forms:read", "submissions:read", "webhooks:manage"]
READ_WRITE = ["forms:read", "submissions:read", "submissions:write"]
BLOCKS = [{"type": "url", "key": "site", "title": "Your site"}]
WEBHOOKS = "/settings/webhooks"
ORGANIZATION = "/settings/org"
FORM_TYPE = FORM["Content-Type"].encode()
_ERROR = re.compile(r'<p class="error" role="alert">([^<]*)</p>')
_NOTICE = re.compile(r'<p class="notice" role="status">([^<]*)</p>')
_TEXTAREA = re.compile(r'<textarea id="origins" name="origins"[^>]*>([^<]*)</textarea>')
_FORM_TEXTAREA = re.compile(r'<textarea id="embed-origins" name="origins"[^>]*>([^<]*)</textarea>')


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        public_posts_per_ip=100_000,  # every hostile URL posted from the one page
        secret_key=["h" * 32],
        webhook_allow_private_networks=True,
        webhook_worker="off",
        # Each sign-in comes from an address of its own (X-Forwarded-For),
        # so the sign-in throttle's 20 attempts an address stay out of the way.
        trusted_proxies=["127.0.0.1"],
    )


@pytest.fixture
async def api(engine: AsyncEngine, settings: Settings, contract: Contract) -> AsyncIterator[Api]:
    """The root fixture's client, except that a server error comes back as the
    500 a real client gets instead of being raised here: a test goes on to the
    next case, and one run lists every case that fails."""
    app = app_on(engine, settings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        yield Api(client, settings, contract)
    await release(app)


@pytest.fixture(autouse=True)
def _names_resolve() -> Iterator[None]:
    """Every host name resolves at once (to loopback, which the settings
    allow): what is judged is the URL, not this machine's DNS."""

    async def lookup(host: str, _: int) -> list[str]:
        return ["127.0.0.1"]

    with egress.resolved_by(lookup):
        yield


def _server_error(what: str, response: httpx.Response) -> list[str]:
    if response.status_code >= 500:
        return [f"{what}: {response.status_code} {response.text[:200]}"]
    return []


def _api_answer(
    api: Api, what: str, sent: str, response: httpx.Response, success: int, pointer: str
) -> list[str]:
    """What is wrong with an API answer to `sent`: a status other than
    `success` or 422 (400 for a lone surrogate, which is not I-JSON), a
    refusal that is not a problem document, a 422 not pointing at `pointer`,
    or anything the OpenAPI document does not allow."""
    status = response.status_code
    if status not in ({400} if has_lone_surrogate(sent) else {success, 422}):
        return [f"{what}: {status} {response.text[:200]}"]
    wrong = [
        f"{what}: {broken}"
        for broken in api.contract.problems(response.request.method, response.url.path, response)
    ]
    if status >= 400:
        if response.headers.get("content-type") != "application/problem+json":
            wrong.append(f"{what}: {status} as {response.headers.get('content-type')}")
        elif status == 422:
            pointers = [error["pointer"] for error in response.json().get("errors", [])]
            if pointer not in pointers:
                wrong.append(f"{what}: 422 pointing at {pointers}, not {pointer}")
    return wrong


def _kept(what: str, value: str, *, ascii_only: bool = False) -> list[str]:
    """What is wrong with a value that was accepted and kept."""
    control = raw_control(value)
    if control is not None:
        return [f"{what}: kept with a raw {control}: {value!r}"]
    if ascii_only and not value.isascii():
        return [f"{what}: kept not percent-encoded or IDNA-normalized: {value!r}"]
    return []


async def _read_back_and_delete(api: Api, key: str, added: dict[str, str]) -> list[str]:
    """Every endpoint `added` (its id -> the case that added it) read back
    in one list, then deleted (an organization has at most 50): what is wrong
    with the URLs kept."""
    failures: list[str] = []
    listed = await api.get("/v1/webhook-endpoints", key)
    for endpoint in listed.json()["data"]:
        failures += _kept(
            f"{added.pop(endpoint['id'])}, read back", endpoint["url"], ascii_only=True
        )
        deleted = await api.delete(f"/v1/webhook-endpoints/{endpoint['id']}", key)
        assert deleted.status_code == 204, deleted.text
    assert not added, f"added, then not listed: {added}"
    return failures


async def _webhook_key(session: AsyncSession) -> str:
    organization = await create_org(session)
    _, key = await create_key(session, organization, scopes=MANAGE)
    await session.commit()
    return key


async def test_webhook_endpoint_urls_posted_over_the_api(api: Api, session: AsyncSession) -> None:
    key = await _webhook_key(session)
    failures: list[str] = []
    added: dict[str, str] = {}

    for what, url in url_cases():
        response = await api.client.post(
            "/v1/webhook-endpoints",
            content=json_body({"url": url}),
            headers={**JSON, "Authorization": f"Bearer {key}"},
        )
        failures += _api_answer(api, what, url, response, 201, "/url")
        if response.status_code == 201:
            failures += _kept(what, response.json()["url"], ascii_only=True)
            added[response.json()["id"]] = what
            if len(added) == 40:
                failures += await _read_back_and_delete(api, key, added)
    failures += await _read_back_and_delete(api, key, added)

    assert not failures, "\n".join(failures)


async def test_webhook_endpoint_urls_patched_over_the_api(api: Api, session: AsyncSession) -> None:
    key = await _webhook_key(session)
    created = await api.post("/v1/webhook-endpoints", key, json={"url": "https://example.com/"})
    assert created.status_code == 201, created.text
    path = f"/v1/webhook-endpoints/{created.json()['id']}"
    failures: list[str] = []

    for what, url in url_cases():
        response = await api.client.patch(
            path,
            content=json_body({"url": url}),
            headers={**JSON, "Authorization": f"Bearer {key}"},
        )
        failures += _api_answer(api, what, url, response, 200, "/url")
        if response.status_code == 200:
            failures += _kept(what, response.json()["url"], ascii_only=True)
    stored = await api.get(path, key)
    failures += _kept("the URL at the end", stored.json()["url"], ascii_only=True)

    assert not failures, "\n".join(failures)


async def _url_form(session: AsyncSession) -> tuple[str, str]:
    organization = await create_org(session)
    _, key = await create_key(session, organization, scopes=READ_WRITE)
    form = await create_form(session, organization, blocks=BLOCKS)
    await session.commit()
    return form.id, key


async def test_url_answers_posted_over_the_api(api: Api, session: AsyncSession) -> None:
    form_id, key = await _url_form(session)
    failures: list[str] = []

    for what, url in url_cases():
        response = await api.client.post(
            f"/v1/forms/{form_id}/submissions",
            content=json_body({"answers": {"site": url}}),
            headers={**JSON, "Authorization": f"Bearer {key}"},
        )
        failures += _api_answer(api, what, url, response, 201, "/answers/site")
        if response.status_code == 201:
            failures += _kept(what, response.json()["answers"]["site"])

    assert not failures, "\n".join(failures)


async def test_url_answers_patched_over_the_api(api: Api, session: AsyncSession) -> None:
    form_id, key = await _url_form(session)
    form_path = f"/v1/forms/{form_id}/submissions"
    created = await api.post(form_path, key, json={"answers": {"site": "https://example.com/"}})
    assert created.status_code == 201, created.text
    path = f"{form_path}/{created.json()['id']}"
    failures: list[str] = []

    for what, url in url_cases():
        response = await api.client.patch(
            path,
            content=json_body({"answers": {"site": url}}),
            headers={**JSON, "Authorization": f"Bearer {key}"},
        )
        failures += _api_answer(api, what, url, response, 200, "/answers/site")
        if response.status_code == 200:
            failures += _kept(what, response.json()["answers"]["site"])

    assert not failures, "\n".join(failures)


async def test_url_answers_posted_from_the_hosted_page(api: Api, session: AsyncSession) -> None:
    form_id, key = await _url_form(session)
    failures: list[str] = []

    for what, url in url_cases():
        response = await api.client.post(
            f"/f/{form_id}", content=form_body({"site": url}), headers=FORM
        )
        if response.status_code == 303:
            if response.headers["location"] != f"/f/{form_id}/thanks":
                failures.append(f"{what}: sent to {response.headers['location']}")
        elif response.status_code == 422:
            if 'role="alert"' not in response.text or 'id="site-error"' not in response.text:
                failures.append(f"{what}: 422 without the form and its error")
        else:
            failures.append(f"{what}: {response.status_code} {response.text[:200]}")
    async for answer in _every_answer(api, form_id, key):
        failures += _kept("a stored answer", answer)

    assert not failures, "\n".join(failures)


async def _every_answer(api: Api, form_id: str, key: str) -> AsyncIterator[str]:
    after = 0
    while True:
        page = await api.get(
            f"/v1/forms/{form_id}/submissions/changes?after={after}&limit=1000", key
        )
        body: dict[str, Any] = page.json()
        for item in body["data"]:
            yield item["answers"]["site"]
        after = body["next"]
        if not body["hasMore"]:
            return


async def _signed_in_owner(api: Api, session: AsyncSession) -> tuple[Browser, str, str, str]:
    """An owner's browser, signed in; the organization's key, a published form
    and the organization's id."""
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    _, key = await create_key(session, organization, scopes=MANAGE)
    form = await create_form(session, organization, blocks=BLOCKS)
    await session.commit()
    browser = await Browser(api.client).sign_in(owner.email)
    return browser, key, form.id, organization.id


def _shown(html: str, pattern: re.Pattern[str]) -> str | None:
    match = pattern.search(html)
    return unescape(match.group(1)) if match else None


def _form_refusal(what: str, response: httpx.Response, field: str) -> list[str]:
    """A settings form's field refused as it arrives (NUL, a lone surrogate):
    a 422 problem document naming the field."""
    if response.headers.get("content-type") != "application/problem+json":
        return [f"{what}: {response.status_code} {response.text[:200]}"]
    pointers = [error["pointer"] for error in response.json().get("errors", [])]
    return [] if f"/{field}" in pointers else [f"{what}: 422 pointing at {pointers}"]


async def test_webhook_urls_added_on_the_settings_page(api: Api, session: AsyncSession) -> None:
    """The page strips the URL's edges, then refuses or keeps it through the
    service the API uses (whose tests put each character in every place):
    here, in the host and at the edges."""
    browser, key, _, _ = await _signed_in_owner(api, session)
    failures: list[str] = []
    added: dict[str, str] = {}

    for what, url in url_cases({"host": URL_PLACES["host"], "edges": URL_PLACES["edges"]}):
        response = await api.client.post(
            WEBHOOKS, content=form_body({"url": url, "csrf_token": browser.csrf}), headers=FORM
        )
        if response.status_code == 422:
            failures += _form_refusal(what, response, "url")
            continue
        if response.status_code != 303:
            failures.append(f"{what}: {response.status_code} {response.text[:200]}")
            continue
        location = response.headers["location"]
        if location == WEBHOOKS:
            page = await api.client.get(location)
            if (fault := _server_error(what, page)) or not _shown(page.text, _ERROR):
                failures += fault or [f"{what}: refused without a message"]
            continue
        # Added: its page (tests/web/test_webhooks.py reads it) shows the
        # one-time secret to nobody here; the URL is read back over the API.
        added[location.removeprefix(f"{WEBHOOKS}/")] = what
        if len(added) == 40:
            failures += await _read_back_and_delete(api, key, added)
    failures += await _read_back_and_delete(api, key, added)

    assert not failures, "\n".join(failures)


async def test_embed_origins_set_on_the_organization_page(api: Api, session: AsyncSession) -> None:
    browser, _, form_id, _ = await _signed_in_owner(api, session)
    failures: list[str] = []
    shown_to_browsers = ""

    for what, origins in url_cases(ORIGIN_PLACES):
        # With a good origin beside it: one bad line must not pass, or spoil the good one.
        posted = f"https://good.example\n{origins}"
        response = await api.client.post(
            f"{ORGANIZATION}/embedding",
            content=form_body({"origins": posted, "csrf_token": browser.csrf}),
            headers=FORM,
        )
        if response.status_code == 422:
            failures += _form_refusal(what, response, "origins")
            continue
        if response.status_code != 303 or response.headers["location"] != ORGANIZATION:
            failures.append(f"{what}: {response.status_code} {response.text[:200]}")
            continue
        page = await api.client.get(ORGANIZATION)
        if (fault := _server_error(what, page)) or _shown(page.text, _ERROR):
            failures += fault
            continue
        if not _shown(page.text, _NOTICE):
            failures.append(f"{what}: neither refused nor saved")
            continue
        saved = _TEXTAREA.search(page.text)
        assert saved is not None
        saved_origins = unescape(saved.group(1))
        for origin in saved_origins.split("\n"):  # one a line
            failures += _kept(what, origin, ascii_only=True)
        if saved_origins == shown_to_browsers:
            continue
        # The saved origins go to the hosted page's Content-Security-Policy header.
        shown_to_browsers = saved_origins
        hosted = await api.client.get(f"/f/{form_id}")
        if hosted.status_code != 200:
            failures.append(f"{what}: the hosted page then answers {hosted.status_code}")
        elif "https://good.example" not in hosted.headers["content-security-policy"]:
            failures.append(f"{what}: {hosted.headers['content-security-policy']}")

    assert not failures, "\n".join(failures)


async def test_embed_origins_of_a_form_patched_over_the_api(
    api: Api, session: AsyncSession
) -> None:
    organization = await create_org(session)
    _, key = await create_key(session, organization, scopes=["forms:read", "forms:write"])
    form = await create_form(session, organization, blocks=BLOCKS)
    await session.commit()
    path = f"/v1/forms/{form.id}"
    failures: list[str] = []

    for what, origin in url_cases(ORIGIN_PLACES):
        # After a good origin: the pointer names the item, and the good one is not spoiled.
        response = await api.client.patch(
            path,
            content=json_body({"embedOrigins": ["https://good.example", origin]}),
            headers={**JSON, "Authorization": f"Bearer {key}"},
        )
        failures += _api_answer(api, what, origin, response, 200, "/embedOrigins/1")
        if response.status_code == 200:
            kept = response.json()["embedOrigins"]
            if kept[0] != "https://good.example":
                failures.append(f"{what}: kept {kept!r}")
            for each in kept:
                failures += _kept(what, each, ascii_only=True)
            hosted = await api.client.get(f"/f/{form.id}")
            if hosted.headers["content-security-policy"].count("https://") != len(kept):
                failures.append(f"{what}: {hosted.headers['content-security-policy']}")

    assert not failures, "\n".join(failures)


async def test_embed_origins_set_on_a_forms_page(api: Api, session: AsyncSession) -> None:
    """The organization's page and this one take the text through the same
    parse (the test above puts each character in every place): here, in the
    host, kept on the page when refused."""
    browser, _, form_id, _ = await _signed_in_owner(api, session)
    page_path = f"/forms/{form_id}"
    failures: list[str] = []

    for what, origins in url_cases({"host": ORIGIN_PLACES["host"]}):
        posted = f"https://good.example\n{origins}"
        fields = {"embedding": "own", "origins": posted, "csrf_token": browser.csrf}
        response = await api.client.post(
            f"{page_path}/embedding", content=form_body(fields), headers=FORM
        )
        if response.status_code == 422:
            failures += _form_refusal(what, response, "origins")
            continue
        if response.status_code != 303 or response.headers["location"] != page_path:
            failures.append(f"{what}: {response.status_code} {response.text[:200]}")
            continue
        page = await api.client.get(page_path)
        if fault := _server_error(what, page):
            failures += fault
            continue
        shown = _shown(page.text, _FORM_TEXTAREA)
        if _shown(page.text, _ERROR):
            # What was typed, to be fixed (as the server reads a form: broken UTF-8 replaced).
            typed = posted.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            if shown != typed:
                failures.append(f"{what}: refused, and the page shows {shown!r}")
            continue
        if not _shown(page.text, _NOTICE) or shown is None:
            failures.append(f"{what}: neither refused nor saved")
            continue
        for origin in shown.split("\n"):
            failures += _kept(what, origin, ascii_only=True)
        hosted = await api.client.get(f"/f/{form_id}")
        if "https://good.example" not in hosted.headers["content-security-policy"]:
            failures.append(f"{what}: {hosted.headers['content-security-policy']}")

    assert not failures, "\n".join(failures)


def _local(location: str) -> bool:
    """Whether a browser following `location` stays on this site: it drops
    TAB, CR and LF anywhere and C0 controls and spaces at the ends first."""
    cleaned = re.sub(r"[\t\r\n]", "", location).strip("".join(map(chr, range(0x21))))
    return cleaned.startswith("/") and not cleaned.startswith(("//", "/\\"))


def _redirect(what: str, response: httpx.Response) -> list[str]:
    """What is wrong with a redirect to a `next`: it must stay on this site,
    in ASCII without a control character."""
    if response.status_code != 303:
        return [f"{what}: {response.status_code} {response.text[:200]}"]
    location = response.headers["location"]
    if not location.isascii() or raw_control(location) or not _local(location):
        return [f"{what}: sent to {location!r}"]
    return []


async def test_next_after_signing_in(api: Api, session: AsyncSession) -> None:
    organization = await create_org(session)
    person = await add_member(session, organization, Role.viewer)
    await session.commit()
    failures: list[str] = []
    addresses = (f"10.0.{n // 250}.{n % 250}" for n in count())

    for place, template in PATH_PLACES.items():
        # Signed in with the character inside the path only (a sign-in is this
        # file's slowest request): on the edges, the page shows the same check's verdict.
        signs_in = place in ("path and query", "between slashes")
        for what, next_path in placed_all({place: template}):
            api.client.cookies.clear()
            form = await api.client.get(f"/sign-in?next={percent_encoded(next_path)}")
            if form.status_code != 200:
                failures.append(f"{what}: the sign-in page answers {form.status_code}")
                continue
            shown = unescape(hidden_field(form.text, "next"))
            if shown != "/forms" and not _local(shown):
                failures.append(f"{what}: the sign-in page carries next={shown!r}")
            if not signs_in:
                continue
            fields = {
                "email": person.email,
                "password": PASSWORD,
                "csrf_token": csrf_field(form.text),
                "next": next_path,
            }
            response = await api.client.post(
                "/sign-in",
                content=form_body(fields),
                headers={**FORM, "X-Forwarded-For": next(addresses)},
            )
            if response.status_code == 422:
                failures += _form_refusal(what, response, "next")
            else:
                failures += _redirect(what, response)

    assert not failures, "\n".join(failures)


async def test_next_after_switching_organization_and_to_sign_in(
    api: Api, session: AsyncSession
) -> None:
    browser, _, _, organization_id = await _signed_in_owner(api, session)
    failures: list[str] = []

    # The check signing in makes (test_next_after_signing_in puts the
    # character in every place): here, where it matters to a browser.
    for what, next_path in placed_all({"between slashes": PATH_PLACES["between slashes"]}):
        fields = {"organization_id": organization_id, "next": next_path}
        response = await api.client.post(
            "/settings/organization",
            content=form_body({**fields, "csrf_token": browser.csrf}),
            headers=FORM,
        )
        if response.status_code == 422:
            failures += _form_refusal(what, response, "next")
        else:
            failures += _redirect(what, response)
    # Signed out, a page's own address (path and query) becomes the sign-in's next.
    api.client.cookies.clear()
    for entry in TABLE:
        response = await api.client.get("/settings/keys?q=" + percent_encoded(entry.text))
        failures += _redirect(f"{entry.name}, signed out", response)
        if not response.headers.get("location", "").startswith("/sign-in?next=/settings/keys"):
            failures.append(f"{entry.name}, signed out: to {response.headers.get('location')}")

    assert not failures, "\n".join(failures)


async def test_the_origin_header_of_a_settings_form(api: Api, session: AsyncSession) -> None:
    """Every post to the settings area is checked against its Origin header,
    parsed as a URL: another site's, or one that is no origin, is refused
    with the page saying so."""
    browser, _, _, _ = await _signed_in_owner(api, session)
    body = form_body({"origins": "", "csrf_token": browser.csrf})
    ours = await api.client.post(
        f"{ORGANIZATION}/embedding", content=body, headers={**FORM, "Origin": BASE_URL}
    )
    assert ours.status_code == 303, ours.text
    failures: list[str] = []

    for what, origin in url_cases({"host": ORIGIN_PLACES["host"]}):
        # As the bytes a client sends (a server reads header values as Latin-1).
        headers = {b"Content-Type": FORM_TYPE, b"Origin": origin.encode("utf-8", "surrogatepass")}
        response = await api.client.post(f"{ORGANIZATION}/embedding", content=body, headers=headers)
        if response.status_code != 403 or "This page had expired" not in response.text:
            failures.append(f"{what}: {response.status_code} {response.text[:200]}")

    assert not failures, "\n".join(failures)
