"""A form opens and closes itself at a time, or closes after N submissions:
exactly N under concurrent posts (one app, and two apps on one database),
its status following with one `form.status_changed` event per move, posts
judged by the time before the sweep runs, and its page saying so."""

import asyncio
from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_write_sessionmaker
from formsapi.form import service as form_service
from formsapi.form.schemas import FormUpdate
from formsapi.kit.time import isoformat_z, shift, utcnow
from formsapi.models import Event, Form
from formsapi.tenancy import scoped
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
GOOD = {"name": "Ada", "colors": "blue"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _form(session: AsyncSession, status: str = "published") -> tuple[str, str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, status=status)
    await session.commit()
    return org.id, form.id, secret


async def _moves(session: AsyncSession, org_id: str, form_id: str) -> list[dict[str, Any]]:
    """The form's status changes, in order, as their events carry them."""
    rows = await session.scalars(
        select(Event.data)
        .where(scoped(Event, org_id), Event.form_id == form_id, Event.type == "form.status_changed")
        .order_by(Event.seq)
    )
    moves = [
        {name: data.get(name) for name in ("from", "to", "reason")}
        for data in map(orjson.loads, rows)
    ]
    await session.commit()  # SQLite: the test's session holds no write lock after
    return moves


def _at(delta: timedelta) -> str:
    return isoformat_z(utcnow() + delta)


async def _post(api: Api, form_id: str, secret: str) -> Any:
    return await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})


async def test_a_form_closes_at_exactly_n_under_50_concurrent_posts(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    changed = await api.patch(f"/v1/forms/{form_id}", secret, json={"maxSubmissions": 20})
    assert changed.json()["maxSubmissions"] == 20

    responses = await asyncio.gather(*(_post(api, form_id, secret) for _ in range(50)))

    assert sorted(r.status_code for r in responses) == [201] * 20 + [409] * 30
    refused = [r.json() for r in responses if r.status_code == 409]
    assert {p["type"] for p in refused} == {"/problems/form-closed"}
    assert {p["reason"] for p in refused} == {"maxSubmissions"}
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert (form["status"], form["responseCount"]) == ("closed", 20)
    assert await _moves(session, org_id, form_id) == [
        {"from": "published", "to": "closed", "reason": "maxSubmissions"}
    ]
    late = await _post(api, form_id, secret)
    assert late.status_code == 409
    assert late.json()["type"] == "/problems/form-closed"


async def test_two_apps_on_one_database_take_exactly_n_between_them(
    settings: Settings, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    headers = {"Authorization": f"Bearer {secret}"}
    url = f"/v1/forms/{form_id}/submissions"
    async with apps_sharing(settings) as clients:
        await clients[0].patch(f"/v1/forms/{form_id}", headers=headers, json={"maxSubmissions": 17})
        responses = await asyncio.gather(
            *(clients[i % 2].post(url, headers=headers, json={"answers": GOOD}) for i in range(50))
        )
    assert sorted(r.status_code for r in responses) == [201] * 17 + [409] * 33
    count = await session.scalar(
        select(Form.response_count).where(scoped(Form, org_id), Form.id == form_id)
    )
    assert count == 17
    assert await _moves(session, org_id, form_id) == [
        {"from": "published", "to": "closed", "reason": "maxSubmissions"}
    ]


async def test_a_form_opens_at_its_time_even_before_the_sweep(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    org_id, form_id, secret = await _form(session, status="draft")
    opens = _at(timedelta(hours=1))
    body = {
        "status": "published",
        "opensAt": opens,
        "messageBeforeOpening": "Doors open at <b>nine</b> & not before",
    }
    published = (await api.patch(f"/v1/forms/{form_id}", secret, json=body)).json()
    # Published before its time, it waits closed.
    assert (published["status"], published["opensAt"]) == ("closed", opens)

    early = await _post(api, form_id, secret)
    assert early.status_code == 409
    assert early.json()["type"] == "/problems/form-not-open"
    assert early.json()["opensAt"] == opens
    page = await api.get(f"/f/{form_id}")
    assert page.status_code == 200
    assert "Doors open at &lt;b&gt;nine&lt;/b&gt; &amp; not before" in page.text
    assert 'name="name"' not in page.text  # not the questions

    with shift(timedelta(hours=1, seconds=1)):
        assert 'name="name"' in (await api.get(f"/f/{form_id}")).text
        taken = await _post(api, form_id, secret)
        assert taken.status_code == 201, taken.text
        form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
        assert (form["status"], form["opensAt"]) == ("published", None)
        assert await form_service.settle_due(create_write_sessionmaker(engine)) == 0
    assert await _moves(session, org_id, form_id) == [
        {"from": "draft", "to": "closed", "reason": "opensAt"},
        {"from": "closed", "to": "published", "reason": "opensAt"},
    ]


async def test_a_post_after_the_closing_time_is_refused_before_the_sweep(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    closes = _at(timedelta(hours=1))
    body = {"closesAt": closes, "messageAfterClosing": "Registration ended <script>x</script>"}
    assert (await api.patch(f"/v1/forms/{form_id}", secret, json=body)).status_code == 200
    assert (await _post(api, form_id, secret)).status_code == 201

    with shift(timedelta(hours=1)):
        posts = await asyncio.gather(*(_post(api, form_id, secret) for _ in range(5)))
        assert {r.status_code for r in posts} == {409}
        assert {r.json()["reason"] for r in posts} == {"closesAt"}
        page = await api.get(f"/f/{form_id}")
    assert page.status_code == 410
    assert "Registration ended &lt;script&gt;x&lt;/script&gt;" in page.text
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert (form["status"], form["responseCount"]) == ("closed", 1)
    assert await _moves(session, org_id, form_id) == [
        {"from": "published", "to": "closed", "reason": "closesAt"}
    ]


async def test_the_sweep_closes_and_opens_forms_once(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    org_id, closing, secret = await _form(session)
    _, opening, opening_secret = await _form(session, status="draft")
    await api.patch(f"/v1/forms/{closing}", secret, json={"closesAt": _at(timedelta(minutes=5))})
    soon = {"opensAt": _at(timedelta(minutes=5))}
    assert (await api.patch(f"/v1/forms/{opening}", opening_secret, json=soon)).status_code == 200
    other = await create_org(session)
    _, other_secret = await create_key(session, other, scopes=SCOPES)
    later = (await create_form(session, other)).id
    await session.commit()
    body = {"status": "published", "opensAt": _at(timedelta(minutes=5))}
    await api.patch(f"/v1/forms/{later}", other_secret, json=body)
    sessions = create_write_sessionmaker(engine)

    assert await form_service.settle_due(sessions) == 0
    with shift(timedelta(minutes=6)):
        assert await form_service.settle_due(sessions) == 2
        assert await form_service.settle_due(sessions) == 0
    assert (await api.get(f"/v1/forms/{closing}", secret)).json()["status"] == "closed"
    assert (await api.get(f"/v1/forms/{later}", other_secret)).json()["status"] == "published"
    assert await _moves(session, org_id, closing) == [
        {"from": "published", "to": "closed", "reason": "closesAt"}
    ]
    # A draft's opening time is no instruction to publish it.
    assert (await api.get(f"/v1/forms/{opening}", opening_secret)).json()["status"] == "draft"


async def test_reopening_needs_room_or_a_later_closing_time(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}"
    await api.patch(url, secret, json={"maxSubmissions": 2})
    first = (await _post(api, form_id, secret)).json()
    assert (await _post(api, form_id, secret)).status_code == 201
    assert (await api.get(url, secret)).json()["status"] == "closed"

    again = await api.patch(url, secret, json={"status": "published"})
    assert again.status_code == 409
    assert again.json()["type"] == "/problems/form-ended"
    # A deleted submission gives its place back; the form stays closed until
    # someone publishes it.
    deleted = await api.delete(f"{url}/submissions/{first['id']}", secret)
    assert deleted.status_code == 204
    assert (await api.get(url, secret)).json()["status"] == "closed"
    assert (await api.patch(url, secret, json={"status": "published"})).status_code == 200
    assert (await _post(api, form_id, secret)).status_code == 201
    assert (await api.get(url, secret)).json()["status"] == "closed"

    raised = await api.patch(url, secret, json={"status": "published", "maxSubmissions": 3})
    assert raised.json()["status"] == "published"
    assert (await _post(api, form_id, secret)).status_code == 201
    await api.patch(url, secret, json={"closesAt": _at(timedelta(days=1))})
    with shift(timedelta(days=2)):
        blocked = await api.patch(url, secret, json={"status": "published", "maxSubmissions": 9})
        assert blocked.status_code == 409  # its closing time has passed
        cleared = {"status": "published", "maxSubmissions": 9, "closesAt": None}
        assert (await api.patch(url, secret, json=cleared)).json()["status"] == "published"
        assert (await _post(api, form_id, secret)).status_code == 201
    assert [m["reason"] for m in await _moves(session, org_id, form_id)] == [
        "maxSubmissions",
        None,
        "maxSubmissions",
        None,
        "maxSubmissions",
        None,
    ]


async def test_limits_refuse_what_cannot_be_meant(api: Api, session: AsyncSession) -> None:
    _, form_id, secret = await _form(session)
    url = f"/v1/forms/{form_id}"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"opensAt": "2027-01-01T09:00:00"}, "/opensAt"),  # no offset
        ({"closesAt": "2027-01-01"}, "/closesAt"),
        ({"closesAt": "tomorrow"}, "/closesAt"),
        ({"opensAt": "0001-01-01T00:00:00+01:00"}, "/opensAt"),
        ({"opensAt": "9999-12-31T23:59:59-01:00"}, "/opensAt"),
        ({"maxSubmissions": 0}, "/maxSubmissions"),
        ({"maxSubmissions": -3}, "/maxSubmissions"),
        ({"maxSubmissions": 10**30}, "/maxSubmissions"),
        ({"maxSubmissions": 2.5}, "/maxSubmissions"),
        ({"messageAfterClosing": "x" * 1001}, "/messageAfterClosing"),
        ({"messageBeforeOpening": ""}, "/messageBeforeOpening"),
        (
            {"opensAt": "2027-01-02T09:00:00Z", "closesAt": "2027-01-02T10:00:00+02:00"},
            "/closesAt",
        ),
    ]
    for body, pointer in cases:
        response = await api.patch(url, secret, json=body)
        assert response.status_code == 422, (body, response.text)
        assert pointer in [e["pointer"] for e in response.json()["errors"]], body
    created = await api.post(
        "/v1/forms",
        secret,
        json={"title": "T", "opensAt": "2027-01-02T09:00:00Z", "closesAt": "2027-01-01T09:00Z"},
    )
    assert created.status_code == 422
    # Offsets are kept as the moment they mean.
    moved = await api.patch(url, secret, json={"closesAt": "2099-06-01T12:00:00+02:00"})
    assert moved.json()["closesAt"] == "2099-06-01T10:00:00.000Z"


async def test_another_organizations_form_is_not_found(api: Api, session: AsyncSession) -> None:
    _, form_id, _ = await _form(session)
    _, _, stranger = await _form(session)
    response = await api.patch(f"/v1/forms/{form_id}", stranger, json={"maxSubmissions": 1})
    assert response.status_code == 404
    assert response.json()["type"] == "/problems/not-found"


async def test_a_duplicate_carries_the_limits_but_no_time_that_would_keep_it_closed(
    session: AsyncSession,
) -> None:
    org_id, form_id, _ = await _form(session)
    later = utcnow() + timedelta(days=3)
    changes = FormUpdate(
        opens_at=later - timedelta(days=1),
        closes_at=later,
        max_submissions=40,
        message_after_closing="Closed.",
    )
    await form_service.update(session, org_id, form_id, changes)
    copy = await form_service.duplicate(session, org_id, form_id)
    past = await form_service.update(
        session, org_id, form_id, FormUpdate(opens_at=None, closes_at=utcnow())
    )
    assert past.status == "closed"
    second = await form_service.duplicate(session, org_id, form_id)
    await session.commit()

    assert (copy.status, copy.opens_at, copy.closes_at) == ("draft", None, later)
    assert (copy.max_submissions, copy.message_after_closing) == (40, "Closed.")
    assert (second.closes_at, second.max_submissions) == (None, 40)
    # The form's portable JSON is what it asks, not when or how often.
    assert "maxSubmissions" not in form_service.exported(copy)


async def test_the_page_s_post_that_finds_no_place_shows_the_closing_message(
    api: Api, session: AsyncSession
) -> None:
    org_id, form_id, secret = await _form(session)
    body = {"maxSubmissions": 1, "messageAfterClosing": "That was the last place."}
    assert (await api.patch(f"/v1/forms/{form_id}", secret, json=body)).status_code == 200
    page = await api.get(f"/f/{form_id}")  # served while there was room
    assert 'name="name"' in page.text
    fields = {"name": "Ada", "colors": "red"}

    first, second = [await api.post(f"/f/{form_id}", data=fields) for _ in range(2)]

    assert first.status_code == 303
    assert second.status_code == 410
    assert "That was the last place." in second.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1
    assert await _moves(session, org_id, form_id) == [
        {"from": "published", "to": "closed", "reason": "maxSubmissions"}
    ]
