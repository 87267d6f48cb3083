"""A form's spam protection on its page in the settings area: the proof of
work turned on and off by those who edit forms, and the posts refused as
spam per day and reason, shown to the form's organization only."""

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.kit.time import utcnow
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_org
from tests.support.honeypot import honeypot_in
from tests.web.conftest import SignedIn, add_member

BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]
BOX = '<input type="checkbox" name="challenge" value="on"'


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _challenge(session: AsyncSession, organization: Organization, form_id: str) -> bool:
    session.expunge_all()
    found = await session.execute(
        select(Form.challenge).where(scoped(Form, organization.id), Form.id == form_id)
    )
    return bool(found.scalar_one())


async def test_an_editor_turns_the_proof_of_work_on_and_off(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, title="Contact", blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)

    page = await browser.get(f"/forms/{form.id}")
    on = await browser.submit(f"/forms/{form.id}/challenge", {"challenge": "on"})
    public = await api.get(f"/f/{form.id}")
    off = await browser.submit(f"/forms/{form.id}/challenge", {})

    assert "Spam protection" in page.text
    assert f"{BOX}>" in page.text  # unchecked
    assert "now asks browsers for a proof of work" in on.text
    assert f"{BOX} checked>" in on.text
    assert "<altcha-widget" in public.text
    assert "no longer asks browsers" in off.text
    assert await _challenge(session, organization, form.id) is False


async def test_a_viewer_and_another_organization_change_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await create_form(session, organization, blocks=BLOCKS)
    other = await create_org(session)
    owner = await add_member(session, other, Role.owner)
    await session.commit()

    as_viewer = await (await signed_in(viewer)).submit(
        f"/forms/{form.id}/challenge", {"challenge": "on"}
    )
    foreign = await (await signed_in(owner)).submit(
        f"/forms/{form.id}/challenge", {"challenge": "on"}
    )

    assert "reads forms; editors, admins and owners make and change them" in as_viewer.text
    assert "There is no such form in this organization." in foreign.text
    assert await _challenge(session, organization, form.id) is False


async def test_refused_posts_are_counted_on_the_form_s_page_and_nowhere_else(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await create_form(session, organization, title="Contact", blocks=BLOCKS)
    quiet = await create_form(session, organization, title="Quiet", blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(viewer)
    honeypot = honeypot_in((await api.get(f"/f/{form.id}")).text)
    for _ in range(2):
        await api.post(f"/f/{form.id}", data={"name": "Bot", honeypot: "http://spam.example"})

    page = await browser.get(f"/forms/{form.id}")
    other = await browser.get(f"/forms/{quiet.id}")

    assert "Refused as spam, last 30 days" in page.text
    today = utcnow().date().isoformat()
    assert (
        f'<tr><td data-label="Day">{today}</td><td data-label="Reason"><code>honeypot</code></td>'
        '<td data-label="Posts" class="num">2</td></tr>'
    ) in page.text
    assert "None: no post to the public page was refused as spam." in other.text
