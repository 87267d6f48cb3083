"""The Webhooks page: owners and admins only, the signing secret shown once,
another organization's endpoint answering like a missing one, the delivery
log escaped, and an endpoint re-enabled and made whole again. Deliveries go
to a real receiver on loopback, sent by a worker in this process."""

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from standardwebhooks import Webhook

from formsapi.api_key.scopes import Scope
from formsapi.config import Settings
from formsapi.kit.egress import Policy
from formsapi.kit.ids import new_id
from formsapi.kit.pagination import PageParams
from formsapi.models import Organization, Role, WebhookEndpoint
from formsapi.organization import service as organization_service
from formsapi.services import services_of
from formsapi.webhook import service
from formsapi.webhook.schemas import WebhookEndpointCreate
from formsapi.webhook.worker import Worker
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver
from tests.web.conftest import Browser, SignedIn, add_member

PAGE = "/settings/webhooks"
_SECRET = re.compile(r'id="new-secret" type="text" readonly value="([^"]+)"')
_SINCE = re.compile(r'id="since" name="since" type="datetime-local" value="([^"]+)"')
_DELIVERY = re.compile(r"/deliveries/(whd_[0-9a-z]+)")
HOSTILE = b"<script>alert('owned')</script><img src=x onerror=alert(1)>"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["w" * 32],
        webhook_allow_private_networks=True,  # the receiver is on loopback
        webhook_worker="off",  # the tests drive their own
        webhook_timeout=10,
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Worker]:
    found = new_worker(engine, settings)
    yield found
    await found.close()


def shown_secret(html: str) -> str | None:
    match = _SECRET.search(html)
    return match.group(1) if match else None


async def add_endpoint(browser: Browser, url: str, **fields: Any) -> tuple[str, str]:
    """Add an endpoint through the page: its id and the secret shown once."""
    shown = await browser.submit(PAGE, {"url": url, **fields})
    secret = shown_secret(shown.text)
    assert secret is not None, shown.text
    return shown.url.path.removeprefix(f"{PAGE}/"), secret


async def endpoint_of(
    engine: AsyncEngine, organization_id: str, endpoint_id: str
) -> WebhookEndpoint:
    async with async_sessionmaker(engine, expire_on_commit=False)() as session:
        return await service.get(session, organization_id, endpoint_id)


async def owner_of_new_org(session: AsyncSession) -> tuple[Organization, Any]:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    return organization, owner


async def test_a_new_endpoints_secret_is_shown_once_and_signs_its_test_event(
    session: AsyncSession, signed_in: SignedIn, worker: Worker
) -> None:
    organization, owner = await owner_of_new_org(session)
    form = await create_form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    async with Receiver() as receiver:
        page = await browser.get(PAGE)
        endpoint_id, secret = await add_endpoint(
            browser,
            receiver.url,
            description="CRM sync",
            event_types=["submission.created", "form.deleted"],
            form_ids=[form.id],
        )
        reloaded = await browser.get(f"{PAGE}/{endpoint_id}")
        tested = await browser.submit(f"{PAGE}/{endpoint_id}/test")
        await worker.drain()
        log = await browser.get(f"{PAGE}/{endpoint_id}")
        listing = await browser.get(PAGE)

    assert 'href="/settings/webhooks" aria-current="page">Webhooks</a>' in page.text
    assert f'name="form_ids" value="{form.id}"' in page.text
    assert secret.startswith("whsec_")
    assert secret not in reloaded.text
    assert shown_secret(reloaded.text) is None
    assert "A test event (ping) is on its way." in tested.text
    [request] = receiver.received
    assert Webhook(secret).verify(request.body, request.headers)["type"] == "ping"
    row = re.search(r'<td data-label="Event">.*?</tr>', log.text, re.S)
    assert row, log.text
    assert '<span class="badge active">succeeded</span>' in row.group(0)
    assert "HTTP 200" in row.group(0)
    assert receiver.url in listing.text
    assert "CRM sync" in listing.text
    assert "<code>form.deleted</code><code>submission.created</code>" in listing.text
    assert f"of {form.title}" in listing.text
    assert '<span class="badge active">enabled</span>' in listing.text


async def test_a_rotated_secret_is_shown_once_and_the_old_one_signs_beside_it(
    session: AsyncSession, signed_in: SignedIn, worker: Worker
) -> None:
    _, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)

    async with Receiver() as receiver:
        endpoint_id, old = await add_endpoint(browser, receiver.url)
        rotated = await browser.submit(f"{PAGE}/{endpoint_id}/rotate")
        new = shown_secret(rotated.text)
        reloaded = await browser.get(f"{PAGE}/{endpoint_id}")
        await browser.submit(f"{PAGE}/{endpoint_id}/test")
        await worker.drain()

    assert new is not None
    assert new != old
    assert re.search(r"The old one keeps signing until \d{4}-\d\d-\d\d \d\d:\d\d UTC", rotated.text)
    assert new not in reloaded.text
    assert "the previous one signs too until" in reloaded.text
    [request] = receiver.received
    for secret in (old, new):
        assert Webhook(secret).verify(request.body, request.headers)["type"] == "ping"


@pytest.mark.parametrize("role", [Role.editor, Role.viewer])
async def test_editors_and_viewers_can_neither_see_nor_use_the_page(
    app: FastAPI, engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn, role: str
) -> None:
    organization, _ = await owner_of_new_org(session)
    actor = await add_member(session, organization, role)
    endpoint, _ = await service.create(
        session,
        services_of(app).secret_box,
        organization.id,
        WebhookEndpointCreate(url="http://127.0.0.1:9/hook"),
        policy=Policy(allow_private=True),
        scopes=frozenset(Scope),
    )
    sealed = endpoint.secret
    await session.commit()
    browser = await signed_in(actor)
    base = f"{PAGE}/{endpoint.id}"

    forms = await browser.get("/forms")
    pages = [await browser.get(path) for path in (PAGE, base, f"{base}/delete")]
    posts = [
        await browser.post(path, data)
        for path, data in [
            (PAGE, {"url": "http://127.0.0.1:9/other"}),
            (f"{base}/test", {}),
            (f"{base}/rotate", {}),
            (f"{base}/disable", {}),
            (f"{base}/delete", {}),
            (f"{base}/recover", {"since": "2020-01-01T00:00"}),
        ]
    ]

    assert "/settings/webhooks" not in forms.text
    for response in pages + posts:
        assert response.status_code == 403, response.text
        assert "Only owners and admins manage webhooks" in response.text
        assert "127.0.0.1:9" not in response.text
    async with async_sessionmaker(engine)() as reader:
        [kept] = await service.list_all(reader, organization.id)
        deliveries, _ = await service.deliveries(
            reader, organization.id, endpoint.id, PageParams(), None
        )
    assert (kept.id, kept.enabled, kept.secret) == (endpoint.id, True, sealed)
    assert list(deliveries) == []


async def test_another_organizations_endpoint_answers_like_a_missing_one(
    app: FastAPI, engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    owner = await add_member(session, acme, Role.owner)
    await add_member(session, beta, Role.owner, owner)  # owner of both; Acme is active
    endpoint, _ = await service.create(
        session,
        services_of(app).secret_box,
        beta.id,
        WebhookEndpointCreate(url="http://127.0.0.1:9/beta"),
        policy=Policy(allow_private=True),
        scopes=frozenset(Scope),
    )
    _, delivery_id = await service.send_test(session, beta.id, endpoint.id)
    sealed = endpoint.secret
    await session.commit()
    browser = await signed_in(owner)
    missing, missing_delivery = new_id("whe"), new_id("whd")

    def answers(endpoint_id: str, delivery: str) -> list[tuple[str, str, dict[str, str]]]:
        base = f"{PAGE}/{endpoint_id}"
        return [
            ("GET", base, {}),
            ("GET", f"{base}/delete", {}),
            ("GET", f"{base}/deliveries/{delivery}", {}),
            ("POST", f"{base}/test", {}),
            ("POST", f"{base}/rotate", {}),
            ("POST", f"{base}/disable", {}),
            ("POST", f"{base}/enable", {}),
            ("POST", f"{base}/delete", {}),
            ("POST", f"{base}/recover", {"since": "2020-01-01T00:00"}),
            ("POST", f"{base}/deliveries/{delivery}/resend", {}),
        ]

    async def outcome(method: str, path: str, data: dict[str, str]) -> tuple[int, str]:
        response = await (browser.get(path) if method == "GET" else browser.post(path, data))
        if response.status_code == 303:
            response = await browser.get(response.headers["location"])
        text = response.text.replace(endpoint.id, "ID").replace(missing, "ID")
        return response.status_code, text.replace(delivery_id, "D").replace(missing_delivery, "D")

    for (method, path, data), (_, twin, _) in zip(
        answers(endpoint.id, delivery_id), answers(missing, missing_delivery), strict=True
    ):
        foreign, absent = await outcome(method, path, data), await outcome(method, twin, data)
        assert foreign == absent, path
        assert foreign[0] in (200, 404), path
        assert "127.0.0.1:9" not in foreign[1]
    stored = await endpoint_of(engine, beta.id, endpoint.id)
    assert (stored.enabled, stored.secret) == (True, sealed)
    async with async_sessionmaker(engine)() as reader:
        deliveries, _ = await service.deliveries(reader, beta.id, endpoint.id, PageParams(), None)
    assert [(d.id, d.attempts) for d in deliveries] == [(delivery_id, 0)]


async def test_a_hostile_answer_is_shown_escaped_and_a_delivery_can_be_resent(
    session: AsyncSession, signed_in: SignedIn, worker: Worker
) -> None:
    _, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)
    answers = [(500, {"content-type": "text/html"}, HOSTILE), (200, {}, b"thanks")]

    async def scripted(_: Received) -> Answer:
        return answers.pop(0)

    async with Receiver(scripted) as receiver:
        endpoint_id, _ = await add_endpoint(browser, receiver.url)
        await browser.submit(f"{PAGE}/{endpoint_id}/test")
        await worker.drain()
        log = await browser.get(f"{PAGE}/{endpoint_id}")
        match = _DELIVERY.search(log.text)
        assert match, log.text
        delivery = f"{PAGE}/{endpoint_id}/deliveries/{match.group(1)}"
        failed = await browser.get(delivery)
        resent = await browser.submit(f"{delivery}/resend")
        await worker.drain()
        after = await browser.get(delivery)

    assert "HTTP 500" in failed.text
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;" in failed.text
    assert "<script>alert" not in failed.text
    assert "<img src=x" not in failed.text
    assert "Sent again (once, not retried)" in resent.text
    assert len(receiver.received) == 2
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert '<span class="badge active">succeeded</span>' in after.text
    assert "Attempt 2" in after.text
    assert "thanks" in after.text


async def test_a_disabled_endpoint_is_re_enabled_and_recovers_what_it_missed(
    api: Api,
    engine: AsyncEngine,
    session: AsyncSession,
    settings: Settings,
    signed_in: SignedIn,
    worker: Worker,
) -> None:
    organization, owner = await owner_of_new_org(session)
    form = await create_form(session, organization)
    _, key = await create_key(session, organization, scopes=["submissions:write"])
    await session.commit()
    browser = await signed_in(owner)
    answer: Answer = (410, {}, b"gone")

    async def receive(_: Received) -> Answer:
        return answer

    async def submit() -> None:
        sent = await api.post(
            f"/v1/forms/{form.id}/submissions",
            key,
            json={"answers": {"name": "Ada", "colors": "red"}},
        )
        assert sent.status_code == 201, sent.text

    async with Receiver(receive) as receiver:
        endpoint_id, _ = await add_endpoint(
            browser, receiver.url, event_types=["submission.created"]
        )
        await submit()
        await worker.drain()  # 410 Gone: disabled at once
        disabled = await endpoint_of(engine, organization.id, endpoint_id)
        await submit()  # never sent: it is disabled
        await worker.drain()
        listing = await browser.get(PAGE)
        page = await browser.get(f"{PAGE}/{endpoint_id}")
        refused = await browser.submit(
            f"{PAGE}/{endpoint_id}/recover", {"since": "2020-01-01T00:00"}
        )
        answer = (200, {}, b"ok")  # the receiver is fixed
        enabled = await browser.submit(f"{PAGE}/{endpoint_id}/enable")
        since = _SINCE.search(enabled.text)
        assert since, enabled.text
        recovered = await browser.submit(f"{PAGE}/{endpoint_id}/recover", {"since": since.group(1)})
        await worker.drain()
        log = await browser.get(f"{PAGE}/{endpoint_id}?status=succeeded")

    assert disabled.disabled_at is not None
    assert disabled.disabled_reason == "The receiver answered 410 Gone."
    when = disabled.disabled_at.strftime("%Y-%m-%d %H:%M")
    assert f"since {when}: The receiver answered 410 Gone." in listing.text
    assert '<span class="badge disabled">disabled</span>' in listing.text
    assert "Send test event" not in page.text
    assert "Enable the endpoint first" in refused.text
    assert "Enabled: new events are sent to it again." in enabled.text
    first_failure = min(filter(None, (disabled.failing_since, disabled.disabled_at)))
    assert since.group(1) == (first_failure - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
    assert "2 deliveries are due now" in recovered.text
    assert len(receiver.received) == 3  # the 410, then both submissions
    assert len({r.headers["webhook-id"] for r in receiver.received[1:]}) == 2
    assert log.text.count('<span class="badge active">succeeded</span>') == 2
    assert (await endpoint_of(engine, organization.id, endpoint_id)).enabled


async def test_disabling_pauses_an_endpoint_until_it_is_enabled(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)
    endpoint_id, _ = await add_endpoint(browser, "http://127.0.0.1:9/hook")

    disabled = await browser.submit(f"{PAGE}/{endpoint_id}/disable")
    listing = await browser.get(PAGE)
    enabled = await browser.submit(f"{PAGE}/{endpoint_id}/enable")

    assert "Disabled: nothing is sent to it" in disabled.text
    assert "Disabled by a member." in listing.text
    assert f'action="{PAGE}/{endpoint_id}/enable"' in listing.text
    assert "Enabled: new events are sent to it again." in enabled.text
    assert "Send test event" in enabled.text


async def test_deleting_asks_first_then_removes_the_endpoint(
    engine: AsyncEngine, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)
    endpoint_id, _ = await add_endpoint(browser, "http://127.0.0.1:9/hook")

    confirm = await browser.get(f"{PAGE}/{endpoint_id}/delete")
    deleted = await browser.submit(f"{PAGE}/{endpoint_id}/delete")

    assert "This cannot be undone." in confirm.text
    assert "is deleted, with its delivery log" in deleted.text
    assert "No endpoints yet." in deleted.text
    async with async_sessionmaker(engine)() as reader:
        assert list(await service.list_all(reader, organization.id)) == []


async def test_what_the_service_refuses_is_said_on_the_page_with_the_form_kept(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)

    bad_url = await browser.submit(
        PAGE,
        {"url": "ftp://example.com/hook", "description": "x", "event_types": ["form.deleted"]},
    )
    too_long = await browser.submit(PAGE, {"url": "http://127.0.0.1:9/", "description": "d" * 501})
    no_form = await browser.submit(PAGE, {"url": "http://127.0.0.1:9/", "form_ids": ["frm_nope"]})
    endpoint_id, _ = await add_endpoint(browser, "http://127.0.0.1:9/hook")
    bad_since = await browser.submit(f"{PAGE}/{endpoint_id}/recover", {"since": "soon"})

    assert "The URL cannot receive webhooks. URL: the URL must start with https://." in (
        bad_url.text
    )
    assert 'value="ftp://example.com/hook"' in bad_url.text  # kept for correcting
    assert 'value="form.deleted" checked' in bad_url.text
    assert "Description: String should have at most 500 characters." in too_long.text
    assert "Some forms do not exist. Forms: no form &#39;frm_nope&#39;." in no_form.text
    assert "Choose the date and time (UTC) to recover from." in bad_since.text
    for page in (bad_url, too_long, no_form):
        assert shown_secret(page.text) is None
        assert "No endpoints yet." in page.text


async def test_without_a_sealing_key_the_page_says_so_instead_of_failing(
    app: FastAPI, session: AsyncSession, signed_in: SignedIn
) -> None:
    _, owner = await owner_of_new_org(session)
    await session.commit()
    browser = await signed_in(owner)
    services_of(app).secret_box = None  # a PostgreSQL deployment without FORMSAPI_SECRET_KEY

    page = await browser.get(PAGE)
    forged = await browser.submit(PAGE, {"url": "http://127.0.0.1:9/hook"})

    assert "Webhooks are not configured on this server" in page.text
    assert 'name="url"' not in page.text  # no form to add one
    assert "its operator must set FORMSAPI_SECRET_KEY" in forged.text
    assert shown_secret(forged.text) is None
