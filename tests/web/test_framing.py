"""What a browser may do with the hosted form pages: no script runs, nothing
loads from elsewhere, nothing is sniffed, and the page shows in a frame only
on the sites the form lists, or else its organization: set on the
organization's page, over the API, and on the form's page."""

import re
from html import unescape

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.web.conftest import Browser, SignedIn, add_member

_ERROR = re.compile(r'<p class="error" role="alert">([^<]*)</p>')
_ORIGINS = re.compile(r'<textarea id="embed-origins" name="origins"[^>]*>([^<]*)</textarea>')
_CHOSEN = re.compile(r'<input type="radio" name="embedding" value="(\w+)" checked>')


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


def _policy(response: object) -> dict[str, str]:
    headers = response.headers  # type: ignore[attr-defined]
    csp = headers["content-security-policy"]
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in csp.split("; ")}


async def test_every_hosted_response_forbids_framing_scripts_and_sniffing_by_default(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    published = await create_form(session, org)
    closed = await create_form(session, org, status="closed")
    await session.commit()

    responses = {
        "form": await api.get(f"/f/{published.id}"),
        "invalid post": await api.post(f"/f/{published.id}", data={}),
        "thanks": await api.get(f"/f/{published.id}/thanks"),
        "closed": await api.get(f"/f/{closed.id}"),
        "missing": await api.get("/f/frm_missing"),
        "stylesheet": await api.get("/f/static/form.css"),
        "too large": await api.post(
            f"/f/{published.id}", content=b"x", headers={"Content-Length": str(2 * 1024 * 1024)}
        ),
    }

    assert {name: r.status_code for name, r in responses.items()} == {
        "form": 200,
        "invalid post": 422,
        "thanks": 200,
        "closed": 410,
        "missing": 404,
        "stylesheet": 200,
        "too large": 413,
    }
    for name, response in responses.items():
        policy = _policy(response)
        assert policy["frame-ancestors"] == "'self'", name
        assert policy["default-src"] == "'none'", name
        # Our own files only (the rules' evaluator and the page's script): nothing
        # inline, nothing from elsewhere; every page works without them.
        assert policy["script-src"] == "'self'", name
        assert policy["style-src"] == "'self'", name
        assert response.headers["x-frame-options"] == "SAMEORIGIN", name
        assert response.headers["x-content-type-options"] == "nosniff", name
    assert "<style>" not in responses["form"].text  # its CSS is the stylesheet, allowed by 'self'


async def test_an_organization_lists_the_sites_that_may_frame_its_forms(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    owner = await add_member(session, org, Role.owner)
    form = await create_form(session, org)
    other = await create_form(session, await create_org(session))
    await session.commit()
    browser = await signed_in(owner)

    saved = await browser.submit(
        "/settings/org/embedding",
        {
            "origins": "https://www.example.com/\nHTTPS://*.Example.org:8443, https://www.example.com"
        },
    )
    page = await api.get(f"/f/{form.id}")
    elsewhere = await api.get(f"/f/{other.id}")

    assert "Your forms may be shown in a frame on 2 sites." in saved.text
    assert (
        _policy(page)["frame-ancestors"]
        == "'self' https://www.example.com https://*.example.org:8443"
    )
    assert "x-frame-options" not in page.headers  # it cannot name sites; CSP does
    assert _policy(elsewhere)["frame-ancestors"] == "'self'"  # another organization's form


@pytest.mark.parametrize(
    "origins",
    [
        "https://example.com/path",
        "javascript:alert(1)",
        "*",
        "'self'",
        "https://a.com; script-src *",
    ],
)
async def test_what_is_not_an_origin_is_refused(
    api: Api, session: AsyncSession, signed_in: SignedIn, origins: str
) -> None:
    org = await create_org(session)
    owner = await add_member(session, org, Role.owner)
    form = await create_form(session, org)
    await session.commit()
    browser = await signed_in(owner)

    refused = await browser.submit("/settings/org/embedding", {"origins": origins})

    assert "Not an origin" in refused.text
    assert _policy(await api.get(f"/f/{form.id}"))["frame-ancestors"] == "'self'"


async def test_only_owners_and_admins_change_where_forms_may_be_framed(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    editor = await add_member(session, org, Role.editor)
    form = await create_form(session, org)
    await session.commit()
    browser = await signed_in(editor)

    refused = await browser.submit("/settings/org/embedding", {"origins": "https://evil.example"})

    assert "Only owners and admins" in refused.text
    assert _policy(await api.get(f"/f/{form.id}"))["frame-ancestors"] == "'self'"


async def _organization_allowing(session: AsyncSession, *origins: str) -> Organization:
    organization = await create_org(session)
    organization.embed_origins = list(origins)
    return organization


async def test_a_forms_own_list_replaces_its_organizations_until_it_is_cleared(
    api: Api, session: AsyncSession
) -> None:
    organization = await _organization_allowing(session, "https://org.example")
    _, key = await create_key(session, organization, scopes=["forms:read", "forms:write"])
    form = await create_form(session, organization)
    neighbour = await create_form(session, organization)
    await session.commit()
    path = f"/v1/forms/{form.id}"

    before = await api.get(f"/f/{form.id}")
    own = ["https://shop.example", "https://*.shop.example"]
    assert (await api.patch(path, key, json={"embedOrigins": own})).status_code == 200
    framed = {
        "form": await api.get(f"/f/{form.id}"),
        "invalid post": await api.post(f"/f/{form.id}", data={}),
        "thanks": await api.get(f"/f/{form.id}/thanks"),
    }
    beside = await api.get(f"/f/{neighbour.id}")
    assert (await api.patch(path, key, json={"embedOrigins": None})).status_code == 200
    after = await api.get(f"/f/{form.id}")

    assert _policy(before)["frame-ancestors"] == "'self' https://org.example"
    for name, response in framed.items():
        assert _policy(response)["frame-ancestors"] == " ".join(["'self'", *own]), name
        assert "x-frame-options" not in response.headers, name
    assert _policy(beside)["frame-ancestors"] == "'self' https://org.example"  # its organization's
    assert _policy(after)["frame-ancestors"] == "'self' https://org.example"  # back to it
    assert "x-frame-options" not in after.headers


async def test_an_empty_own_list_lets_no_site_frame_the_form_whatever_the_organization_allows(
    api: Api, session: AsyncSession
) -> None:
    organization = await _organization_allowing(session, "https://org.example")
    _, key = await create_key(session, organization, scopes=["forms:read", "forms:write"])
    form = await create_form(session, organization, status="closed")
    await session.commit()

    patched = await api.patch(f"/v1/forms/{form.id}", key, json={"embedOrigins": []})
    closed = await api.get(f"/f/{form.id}")  # 410, and framed by nobody

    assert patched.json()["embedOrigins"] == []
    assert closed.status_code == 410
    assert _policy(closed)["frame-ancestors"] == "'self'"
    assert closed.headers["x-frame-options"] == "SAMEORIGIN"


# The form's page (the settings area): its framing, in the panel with its title and slug.


async def _own_origins(session: AsyncSession, organization: Organization, form_id: str) -> object:
    session.expunge_all()
    found = await session.execute(
        select(Form.embed_origins).where(scoped(Form, organization.id), Form.id == form_id)
    )
    return found.scalar_one()


async def _editor(
    session: AsyncSession, signed_in: SignedIn, role: str = Role.editor
) -> tuple[Organization, Browser, Form]:
    organization = await _organization_allowing(session, "https://org.example")
    member = await add_member(session, organization, role)
    form = await create_form(session, organization, title="Survey")
    await session.commit()
    return organization, await signed_in(member), form


def _shown(page: httpx.Response) -> tuple[str | None, str]:
    """The choice the form's page shows checked, and its origins' text."""
    chosen, origins = _CHOSEN.search(page.text), _ORIGINS.search(page.text)
    assert origins is not None, page.text
    return (chosen.group(1) if chosen else None), unescape(origins.group(1))


async def test_an_editor_gives_a_form_its_own_list_on_its_page_and_goes_back_to_the_organizations(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, form = await _editor(session, signed_in)
    action = f"/forms/{form.id}/embedding"

    page = await browser.get(f"/forms/{form.id}")
    own = await browser.submit(
        action, {"embedding": "own", "origins": "HTTPS://Shop.example/\nhttps://*.shop.example"}
    )
    framed = await api.get(f"/f/{form.id}")
    none = await browser.submit(action, {"embedding": "own", "origins": " \n"})
    denied = await api.get(f"/f/{form.id}")
    back = await browser.submit(action, {"embedding": "organization", "origins": "ignored"})
    followed = await api.get(f"/f/{form.id}")

    assert "Use the organization's list" in page.text
    assert "(currently: https://org.example)" in page.text
    assert 'href="/settings/org"' in page.text
    assert f'href="/forms/{form.id}/edit"' in page.text  # the builder, as before
    assert _shown(page) == ("organization", "")
    assert "This form may be shown in a frame on 2 sites." in own.text
    assert _shown(own) == ("own", "https://shop.example\nhttps://*.shop.example")
    assert (
        _policy(framed)["frame-ancestors"] == "'self' https://shop.example https://*.shop.example"
    )
    assert "No site may show this form in a frame." in none.text
    assert _shown(none) == ("own", "")
    assert _policy(denied)["frame-ancestors"] == "'self'"
    assert "follows the organization&#39;s list" in back.text
    assert _shown(back) == ("organization", "")
    assert _policy(followed)["frame-ancestors"] == "'self' https://org.example"
    assert await _own_origins(session, organization, form.id) is None


async def test_the_organizations_list_reads_no_site_when_it_has_none(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get(f"/forms/{form.id}")

    assert "(currently: no site)" in page.text


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"embedding": "own", "origins": "https://ok.example\nhttps://example.com/path"}, None),
        ({"embedding": "own", "origins": "</textarea><script>alert(1)</script>"}, None),
        ({"embedding": "own", "origins": "https://a.com; script-src *"}, None),
        (
            {"embedding": "own", "origins": "\n".join(f"https://s{n}.example" for n in range(21))},
            "At most 20 origins.",
        ),
        ({"embedding": "own", "origins": "x" * 10_001}, "The origins are over 10,000 characters."),
        ({"embedding": "everyone", "origins": ""}, "Choose the organization&#39;s list"),
        ({"origins": "https://ok.example"}, "Choose the organization&#39;s list"),
    ],
)
async def test_what_is_not_a_list_of_origins_is_refused_on_the_page_and_changes_nothing(
    api: Api, session: AsyncSession, signed_in: SignedIn, fields: dict[str, str], said: str | None
) -> None:
    organization, browser, form = await _editor(session, signed_in)

    refused = await browser.submit(f"/forms/{form.id}/embedding", fields)

    [error] = _ERROR.findall(refused.text)
    assert error.startswith(said or "Not an origin (scheme://host[:port], no path): "), error
    assert "<script>alert" not in refused.text
    if len(fields.get("origins", "")) <= 10_000 and fields.get("embedding") == "own":
        assert _shown(refused) == ("own", fields["origins"])  # kept, to be fixed
    assert await _own_origins(session, organization, form.id) is None
    assert (
        _policy(await api.get(f"/f/{form.id}"))["frame-ancestors"] == "'self' https://org.example"
    )


async def test_a_viewer_a_forged_post_and_another_organizations_form_change_no_framing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, viewer, form = await _editor(session, signed_in, Role.viewer)
    owner = await add_member(session, organization, Role.owner)
    other = await _organization_allowing(session)
    theirs = await create_form(session, other, title="Theirs")
    await session.commit()
    browser = await signed_in(owner)
    fields = {"embedding": "own", "origins": "https://evil.example"}

    page = await viewer.get(f"/forms/{form.id}")
    as_viewer = await viewer.submit(f"/forms/{form.id}/embedding", fields)
    forged = [
        await browser.post(f"/forms/{form.id}/embedding", fields, csrf=""),
        await browser.post(f"/forms/{form.id}/embedding", fields, csrf=viewer.csrf),
        await browser.post(
            f"/forms/{form.id}/embedding", fields, headers={"Origin": "https://evil.example"}
        ),
    ]
    foreign = await browser.submit(f"/forms/{theirs.id}/embedding", fields)

    assert 'action="/forms/' + form.id + '/embedding"' not in page.text
    assert "reads forms; editors, admins and owners make and change them" in as_viewer.text
    assert [response.status_code for response in forged] == [403] * 3
    assert all("This page had expired" in response.text for response in forged)
    assert "There is no such form in this organization." in foreign.text
    assert "Theirs" not in foreign.text
    assert await _own_origins(session, organization, form.id) is None
    assert await _own_origins(session, other, theirs.id) is None
