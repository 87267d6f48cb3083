"""A form's notifications page: editors choose who is mailed and how often,
and the respondent's copy; viewers and other organizations cannot see or
change it; without a mail server the page says nothing is sent."""

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from formsapi.notification import service as notification_service
from tests.support.factories import create_form, create_org
from tests.support.mail import smtp_server
from tests.web.conftest import SignedIn, add_member

BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name"},
    {"type": "email", "key": "contact", "title": "Where to reach you"},
]


@pytest.fixture
def smtp_url() -> Iterator[str]:
    with smtp_server() as (url, _):
        yield url


@pytest.fixture
def settings(database_url: str, smtp_url: str) -> Settings:
    # Copies are counted by a keyed hash of each address: they need the key.
    return Settings(
        database_url=database_url, redis_url=None, smtp_url=smtp_url, secret_key="s" * 32
    )


async def test_an_editor_chooses_who_is_told_and_the_respondents_copy(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    editor = await add_member(session, org, Role.editor)
    viewer = await add_member(session, org, Role.viewer)
    form = await create_form(session, org, blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)

    form_page = await browser.get(f"/forms/{form.id}")
    page = await browser.get(f"/forms/{form.id}/notifications")
    saved = await browser.submit(
        f"/forms/{form.id}/notifications",
        {f"member-{editor.id}": "each", f"member-{viewer.id}": "daily", "copy": "contact"},
    )
    current = await notification_service.settings(session, org.id, form.id)

    assert f'href="/forms/{form.id}/notifications"' in form_page.text
    assert page.status_code == 200
    assert "Where to reach you" in page.text
    assert "One address gets at most 3 copies a day from this server" in page.text
    assert "Mail is off" not in page.text
    assert "Saved: 2 members told, and respondents get a copy." in saved.text
    assert {m.email: m.frequency for m in current.members} == {
        editor.email: "each",
        viewer.email: "daily",
    }
    assert current.copy_question == "contact"


async def test_choices_outside_the_members_and_email_questions_are_refused(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    editor = await add_member(session, org, Role.editor)
    outsider = await add_member(session, await create_org(session), Role.owner)
    form = await create_form(session, org, blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)
    path = f"/forms/{form.id}/notifications"

    stranger = await browser.submit(path, {f"member-{outsider.id}": "each"})
    not_email = await browser.submit(path, {"copy": "name"})
    odd = await browser.submit(path, {f"member-{editor.id}": "hourly"})
    current = await notification_service.settings(session, org.id, form.id)

    assert "Only members of the organization can be told" in stranger.text
    assert "one of the form&#39;s email questions" in not_email.text
    assert "Choose each submission, a daily digest or nothing" in odd.text
    assert all(member.frequency is None for member in current.members)
    assert current.copy_question is None


async def test_another_organization_cannot_see_or_change_a_forms_notifications(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    org = await create_org(session)
    form = await create_form(session, org, blocks=BLOCKS)
    other = await add_member(session, await create_org(session), Role.owner)
    await session.commit()
    browser = await signed_in(other)
    missing = await browser.get("/forms/frm_01m8exr2588ab94j8zgqydhzzc/notifications")

    seen = await browser.get(f"/forms/{form.id}/notifications")
    changed = await browser.post(
        f"/forms/{form.id}/notifications", {f"member-{other.id}": "each", "copy": "contact"}
    )
    current = await notification_service.settings(session, org.id, form.id)

    assert seen.status_code == 404
    assert seen.text == missing.text  # the same page as a form that never existed
    assert changed.status_code in (303, 404)
    assert all(member.frequency is None for member in current.members)
    assert current.copy_question is None


async def test_a_viewer_cannot_open_the_page(session: AsyncSession, signed_in: SignedIn) -> None:
    org = await create_org(session)
    viewer = await add_member(session, org, Role.viewer)
    form = await create_form(session, org, blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(viewer)

    page = await browser.get(f"/forms/{form.id}/notifications")
    form_page = await browser.get(f"/forms/{form.id}")

    assert page.status_code == 403
    assert "/notifications" not in form_page.text


class TestWithoutMail:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return Settings(database_url=database_url, redis_url=None)

    async def test_the_page_says_no_mail_is_sent_or_kept(
        self, session: AsyncSession, signed_in: SignedIn
    ) -> None:
        org = await create_org(session)
        owner = await add_member(session, org, Role.owner)
        form = await create_form(session, org, blocks=BLOCKS[:1])
        await session.commit()
        browser = await signed_in(owner)

        page = await browser.get(f"/forms/{form.id}/notifications")

        assert "Mail is off on this server" in page.text
        assert "none is kept to send later" in page.text
        assert "Add an email question to the form" in page.text
