"""A form's own list of the sites that may frame its hosted page, over the
API: set and normalized as the organization's list is, refused item by item,
cleared back to the organization's. Where a form is shown is a delivery
setting, not its content: no new version, but a `form.updated` event; not in
the form's JSON, but carried by a duplicate. (The hosted page's headers:
tests/web/test_framing.py.)"""

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import service as form_service
from formsapi.form.schemas import FormUpdate
from formsapi.models import Form, Organization
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import BLOCKS, create_form, create_key, create_org
from tests.support.settled import events_settled

SCOPES = ["forms:read", "forms:write", "events:read"]


async def _writer(session: AsyncSession) -> tuple[Organization, str]:
    organization = await create_org(session)
    _, secret = await create_key(session, organization, scopes=SCOPES)
    await session.commit()
    return organization, secret


async def test_a_forms_own_origins_are_normalized_kept_and_cleared(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    sent = ["HTTPS://Shop.Example/", "https://*.example.org:8443", "https://shop.example"]

    created = await api.post("/v1/forms", secret, json={"title": "Poll", "embedOrigins": sent})
    path = f"/v1/forms/{created.json()['id']}"
    renamed = await api.patch(path, secret, json={"title": "Poll 2"})
    emptied = await api.patch(path, secret, json={"embedOrigins": []})
    cleared = await api.patch(path, secret, json={"embedOrigins": None})
    plain = await api.post("/v1/forms", secret, json={"title": "Other"})
    listed = await api.get("/v1/forms", secret)

    assert created.status_code == 201, created.text
    # Lower case, no trailing slash, each once, in the order first given.
    assert created.json()["embedOrigins"] == ["https://shop.example", "https://*.example.org:8443"]
    assert renamed.json()["embedOrigins"] == created.json()["embedOrigins"]  # absent: unchanged
    assert emptied.json()["embedOrigins"] == []  # no site may
    assert cleared.json()["embedOrigins"] is None  # the organization's list
    assert (await api.get(path, secret)).json()["embedOrigins"] is None
    assert plain.json()["embedOrigins"] is None  # the default
    # The list of forms is as it was: framing is the form's detail.
    assert {key for form in listed.json()["data"] for key in form} == {
        "id",
        "title",
        "slug",
        "status",
        "responseCount",
        "createdAt",
        "changeSeq",
    }


async def test_what_is_not_a_list_of_origins_is_refused_naming_the_item(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    form = await api.post("/v1/forms", secret, json={"title": "T", "embedOrigins": ["https://a.b"]})
    path = f"/v1/forms/{form.json()['id']}"
    cases: list[tuple[Any, str]] = [
        (["https://ok.example", "https://example.com/path"], "/embedOrigins/1"),
        (["javascript:alert(1)"], "/embedOrigins/0"),
        (["*"], "/embedOrigins/0"),
        (["'self'"], "/embedOrigins/0"),
        (["https://a.com; script-src *"], "/embedOrigins/0"),
        (["https://ex ample.com"], "/embedOrigins/0"),
        (["https://example.com?x"], "/embedOrigins/0"),
        (["https://example.\u0661com"], "/embedOrigins/0"),  # a digit of another script
        ([5], "/embedOrigins/0"),
        ("https://example.com", "/embedOrigins"),  # one, not a list
        ([f"https://s{n}.example" for n in range(21)], "/embedOrigins"),
    ]

    for origins, pointer in cases:
        for method in ("POST", "PATCH"):
            response = await api.request(
                method,
                "/v1/forms" if method == "POST" else path,
                secret,
                json={"title": "T", "embedOrigins": origins},
            )

            assert response.status_code == 422, (method, origins, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert pointer in [error["pointer"] for error in response.json()["errors"]], origins
    assert (await api.get(path, secret)).json()["embedOrigins"] == ["https://a.b"]
    assert len((await api.get("/v1/forms", secret)).json()["data"]) == 1
    # Twenty are taken; the rule names itself in the refusal.
    twenty = [f"https://s{n}.example" for n in range(20)]
    assert (await api.patch(path, secret, json={"embedOrigins": twenty})).status_code == 200
    refused = await api.patch(path, secret, json={"embedOrigins": ["https://a.b/c"]})
    assert refused.json()["errors"][0]["detail"] == (
        "is not an origin (scheme://host[:port], no path)"
    )


async def test_a_change_of_origins_is_no_new_version_but_a_form_updated_event(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _writer(session)
    created = await api.post("/v1/forms", secret, json={"title": "Survey", "blocks": BLOCKS})
    path = f"/v1/forms/{created.json()['id']}"

    framed = await api.patch(path, secret, json={"embedOrigins": ["https://shop.example"]})
    again = await api.patch(path, secret, json={"embedOrigins": ["https://SHOP.example/"]})
    cleared = await api.patch(path, secret, json={"embedOrigins": None})
    await events_settled(api.settings.database_url.get_secret_value())
    events = await api.get("/v1/events", secret, params={"types": "form.updated"})

    assert [r.json()["version"] for r in (created, framed, again, cleared)] == [1, 1, 1, 1]
    assert (await api.get(f"{path}?version=2", secret)).status_code == 404
    # The same list again changes nothing, and says nothing.
    assert [e["data"] for e in events.json()["data"]] == [framed.json(), cleared.json()]
    assert events.json()["data"][0]["data"]["embedOrigins"] == ["https://shop.example"]


async def test_a_duplicate_carries_the_list_and_the_forms_json_leaves_it_out(
    session: AsyncSession,
) -> None:
    organization = await create_org(session)
    framed, denied, plain = [await create_form(session, organization) for _ in range(3)]
    for form, origins in ((framed, ["https://shop.example"]), (denied, [])):
        await form_service.update(
            session, organization.id, form.id, FormUpdate(embed_origins=origins)
        )

    copies = [
        await form_service.duplicate(session, organization.id, form.id)
        for form in (framed, denied, plain)
    ]

    assert [copy.embed_origins for copy in copies] == [["https://shop.example"], [], None]
    assert form_service.detail(copies[0])["embedOrigins"] == ["https://shop.example"]
    # The form's portable JSON (Download JSON, the builder's drafts) is what it asks.
    assert "embedOrigins" not in form_service.exported(framed)


async def _unset(session: AsyncSession, organization: Organization) -> int:
    """The organization's forms whose list is SQL NULL (not the JSON null)."""
    count = await session.scalar(
        select(func.count())
        .select_from(Form)
        .where(scoped(Form, organization.id), Form.embed_origins.is_(None))
    )
    return int(count or 0)


async def test_not_set_is_stored_as_null_and_reads_back_as_none(session: AsyncSession) -> None:
    organization = await create_org(session)
    form = await create_form(session, organization)
    await session.commit()
    assert await _unset(session, organization) == 1

    await form_service.update(session, organization.id, form.id, FormUpdate(embed_origins=[]))
    await session.commit()
    assert await _unset(session, organization) == 0  # [] is a list, not "not set"

    await form_service.update(session, organization.id, form.id, FormUpdate(embed_origins=None))
    await session.commit()
    session.expunge_all()
    assert await _unset(session, organization) == 1
    read = await form_service.get(session, organization.id, form.id)
    assert read.embed_origins is None
