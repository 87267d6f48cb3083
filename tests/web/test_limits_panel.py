"""A form's opening, closing and limit on its page in the settings area:
set by those who edit forms through the service the API uses, shown back,
refused with a reason; a viewer and another organization change nothing."""

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_org
from tests.web.conftest import SignedIn, add_member

BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]
FIELDS = {
    "opens_at": "2099-03-01T09:00",
    "closes_at": "2099-03-08T17:30",
    "max_submissions": "50",
    "message_before_opening": "Registration opens on 1 March.",
    "message_after_closing": "Registration is closed <for now>.",
}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _stored(session: AsyncSession, organization: Organization, form_id: str) -> Any:
    session.expunge_all()
    found = await session.execute(
        select(Form.status, Form.opens_at, Form.closes_at, Form.max_submissions).where(
            scoped(Form, organization.id), Form.id == form_id
        )
    )
    row = found.one()
    await session.commit()
    return row


async def test_an_editor_schedules_and_limits_a_form(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, title="Workshop", blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)

    page = await browser.get(f"/forms/{form.id}")
    saved = await browser.submit(f"/forms/{form.id}/limits", FIELDS)
    public = await api.get(f"/f/{form.id}")

    assert "Opening, closing and limit" in page.text
    assert "Saved. The form is closed now." in saved.text  # it waits for its opening time
    assert 'name="opens_at" type="datetime-local" value="2099-03-01T09:00"' in saved.text
    assert 'value="50"' in saved.text
    assert "Registration is closed &lt;for now&gt;." in saved.text
    status, opens, closes, most = await _stored(session, organization, form.id)
    assert (status, most) == ("closed", 50)
    assert (opens.isoformat(), closes.isoformat()) == (
        "2099-03-01T09:00:00+00:00",
        "2099-03-08T17:30:00+00:00",
    )
    assert public.status_code == 200
    assert "Registration opens on 1 March." in public.text

    cleared = await browser.submit(f"/forms/{form.id}/limits", {})
    assert "Saved." in cleared.text
    assert tuple(await _stored(session, organization, form.id))[1:] == (None, None, None)


async def test_what_cannot_be_meant_is_refused_with_a_reason(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    editor = await add_member(session, organization, Role.editor)
    form = await create_form(session, organization, blocks=BLOCKS)
    await session.commit()
    browser = await signed_in(editor)
    cases = [
        ({**FIELDS, "closes_at": "2099-02-01T09:00"}, "Closes at: must be after opensAt"),
        ({"max_submissions": "0"}, "Maximum submissions:"),
        ({"max_submissions": "-5"}, "Maximum submissions: a whole number"),
        ({"opens_at": "next week"}, "Opens at: give a date and time"),
        ({"message_after_closing": "x" * 1500}, "Message after closing:"),
    ]
    for fields, said in cases:
        refused = await browser.submit(f"/forms/{form.id}/limits", fields)
        assert said in refused.text, (fields, refused.text[-3000:])
    assert tuple(await _stored(session, organization, form.id)) == ("published", None, None, None)


async def test_a_viewer_and_another_organization_change_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    viewer = await add_member(session, organization, Role.viewer)
    form = await create_form(session, organization, blocks=BLOCKS)
    other = await create_org(session)
    owner = await add_member(session, other, Role.owner)
    await session.commit()

    as_viewer = await (await signed_in(viewer)).submit(f"/forms/{form.id}/limits", FIELDS)
    foreign = await (await signed_in(owner)).submit(f"/forms/{form.id}/limits", FIELDS)

    assert "reads forms; editors, admins and owners make and change them" in as_viewer.text
    assert "There is no such form in this organization." in foreign.text
    assert tuple(await _stored(session, organization, form.id)) == ("published", None, None, None)
