"""Who may answer a form, on its page in the settings area: one response
per browser, email address, network address or invitation link, and a
password, set by those who edit forms through the service PATCH uses;
the CSRF token is the session's (tests/web/test_csrf.py checks the rest)."""

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_org
from tests.web.conftest import SignedIn, add_member

BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Your name"},
    {"type": "email", "key": "mail", "title": "Your email"},
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, secret_key="w" * 40)


async def _stored(
    session: AsyncSession, organization: Organization, form_id: str
) -> tuple[str | None, str | None, int | None, bool]:
    session.expunge_all()
    found = await session.execute(
        select(
            Form.one_response_by,
            Form.one_response_question,
            Form.one_response_hours,
            Form.password_hash,
        ).where(scoped(Form, organization.id), Form.id == form_id)
    )
    by, question, hours, hashed = found.one()
    await session.rollback()  # SQLite: no transaction left holding the database
    return by, question, hours, hashed is not None


async def test_an_editor_sets_who_may_answer_and_a_password(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, title="Vote", blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)

    page = await browser.get(f"/forms/{form.id}")
    by_email = await browser.submit(
        f"/forms/{form.id}/admission",
        {"once_by": "email", "once_question": "mail", "password": "2468"},
    )
    stored_email = await _stored(session, organization, form.id)
    public = await api.get(f"/f/{form.id}")
    by_ip = await browser.submit(
        f"/forms/{form.id}/admission", {"once_by": "ip", "once_hours": "6"}
    )
    stored_ip = await _stored(session, organization, form.id)
    cleared = await browser.submit(f"/forms/{form.id}/admission", {"unlock": "on"})

    assert "Responses per person" in page.text
    assert '<option value="mail">Your email</option>' in page.text
    assert "one response per email address. Its page asks for a password first." in by_email.text
    assert 'name="once_by" value="email" checked' in by_email.text
    assert "one is set; type a new one to change it" in by_email.text
    assert stored_email == ("email", "mail", None, True)
    assert 'name="password"' in public.text  # the public page asks for it
    assert "one response per network address every 6 hours" in by_ip.text
    assert stored_ip == ("ip", None, 6, True)  # an empty password field changes nothing
    assert "as often as they like" in cleared.text
    assert await _stored(session, organization, form.id) == (None, None, None, False)


async def test_refused_choices_are_said_and_change_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, title="Vote", blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)
    path = f"/forms/{form.id}/admission"

    shown = []
    for change in (
        {"once_by": "phase of the moon"},
        {"once_by": "email", "once_question": "name"},
        {"once_by": "cookie", "password": "12"},
        {"once_by": "ip", "once_hours": "-1"},
    ):
        refused = await browser.post(path, change)
        assert refused.status_code == 303
        shown.append(await browser.get(refused.headers["location"]))

    assert "Choose how many responses each person may send." in shown[0].text
    assert "must be the key of one of the form&#39;s email questions" in shown[1].text
    assert "The password: String should have at least 4 characters." in shown[2].text
    assert "The hours: a whole number, from 1." in shown[3].text
    assert await _stored(session, organization, form.id) == (None, None, None, False)


async def test_a_viewer_and_another_organization_change_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await create_form(session, organization, blocks=BLOCKS)
    other = await create_org(session)
    owner = await add_member(session, other, Role.owner)
    await session.commit()
    change = {"once_by": "cookie", "password": "2468"}

    as_viewer = await (await signed_in(viewer)).submit(f"/forms/{form.id}/admission", change)
    foreign = await (await signed_in(owner)).submit(f"/forms/{form.id}/admission", change)

    assert "reads forms; editors, admins and owners make and change them" in as_viewer.text
    assert "There is no such form in this organization." in foreign.text
    assert await _stored(session, organization, form.id) == (None, None, None, False)
