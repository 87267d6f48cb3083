"""A form's embed page: the snippet to paste (on the configured public
address, its title escaped), the sites that may show it, and the form in a
frame; every member reads it, another organization's form is missing."""

import html
import re

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from tests.conftest import Api
from tests.support.factories import create_form, create_org
from tests.web.conftest import SignedIn, add_member

PUBLIC = "https://forms.example.com"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, public_url=PUBLIC)


def _snippet(page: str) -> str:
    [text] = re.findall(r'<textarea id="embed-snippet"[^>]*>([^<]*)</textarea>', page)
    return html.unescape(text)


async def test_a_viewer_copies_the_snippet_for_the_organizations_sites(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    org.embed_origins = ["https://www.example.org"]
    viewer = await add_member(session, org, Role.viewer)
    form = await create_form(session, org, title='Sign "up" <now> & win')
    await session.commit()
    browser = await signed_in(viewer)

    form_page = await browser.get(f"/forms/{form.id}")
    page = await browser.get(f"/forms/{form.id}/embed")

    assert f'href="/forms/{form.id}/embed"' in form_page.text
    assert page.status_code == 200
    assert _snippet(page.text) == (
        f'<iframe src="{PUBLIC}/f/{form.id}" title="Sign &#34;up&#34; &lt;now&gt; &amp; win" '
        'width="100%" height="640" style="border:0;max-width:720px" loading="lazy"></iframe>'
    )
    assert "https://www.example.org" in page.text
    assert "(the organization's list)" in page.text
    assert "Editors, admins and owners change it." in page.text
    # The form itself in a frame, which its page lets this service's own pages do.
    assert f'<iframe src="{PUBLIC}/f/{form.id}"' in page.text
    framed = await api.get(f"/f/{form.id}")
    assert "'self' https://www.example.org" in framed.headers["content-security-policy"]


async def test_a_form_whose_own_list_is_empty_says_no_site_may_show_it(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    org.embed_origins = ["https://www.example.org"]
    editor = await add_member(session, org, Role.editor)
    form = await create_form(session, org)
    form.embed_origins = []
    draft = await create_form(session, org, status="draft")
    await session.commit()
    browser = await signed_in(editor)

    page = await browser.get(f"/forms/{form.id}/embed")
    unpublished = await browser.get(f"/forms/{draft.id}/embed")

    assert "No site may show it yet" in page.text
    assert "this form's own list is empty" in page.text
    assert "https://www.example.org" not in page.text
    assert f'href="/forms/{form.id}#manage-heading"' in page.text
    assert "The form is draft: its page shows nothing until it is published." in unpublished.text
    assert "<iframe" not in unpublished.text  # the snippet's text only, escaped
    assert "&lt;iframe" in unpublished.text


async def test_another_organizations_form_is_missing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    mine, theirs = await create_org(session), await create_org(session)
    owner = await add_member(session, mine, Role.owner)
    form = await create_form(session, theirs)
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get(f"/forms/{form.id}/embed")
    missing = await browser.get("/forms/frm_nothing_here/embed")

    assert page.status_code == missing.status_code == 404
    assert page.text.replace(form.id, "frm_nothing_here") == missing.text
