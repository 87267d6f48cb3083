"""A person in several organizations works in one at a time, and sees only its data."""

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.models import Form, Organization, Role, User
from formsapi.organization import service as organization_service
from tests.conftest import Api
from tests.support.factories import create_form
from tests.web.conftest import Browser, SignedIn, add_member, new_key_secret


async def _two_organizations(
    session: AsyncSession,
) -> tuple[User, Organization, Organization, Form, Form]:
    """A user owning Acme and Beta (Acme, first by name, is active at sign-in),
    each with a form and a key of theirs."""
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    user = await add_member(session, acme, Role.owner)
    await add_member(session, beta, Role.editor, user)
    acme_form = await create_form(session, acme, title="Acme survey")
    beta_form = await create_form(session, beta, title="Beta poll")
    await api_key_service.create(session, acme, user, "acme sync")
    await api_key_service.create(session, beta, user, "beta sync")
    await session.commit()
    return user, acme, beta, acme_form, beta_form


async def _switch(browser: Browser, organization: Organization, next: str = "/forms") -> str:
    response = await browser.post(
        "/settings/organization", {"organization_id": organization.id, "next": next}
    )
    assert response.status_code == 303
    return str(response.headers["location"])


async def test_only_the_active_organizations_forms_and_keys_are_shown(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    user, _, beta, _, _ = await _two_organizations(session)
    browser = await signed_in(user)

    acme_forms = (await browser.get("/forms")).text
    acme_keys = (await browser.get("/settings/keys")).text
    await _switch(browser, beta)
    beta_forms = (await browser.get("/forms")).text
    beta_keys = (await browser.get("/settings/keys")).text

    assert "Acme survey" in acme_forms
    assert "Beta poll" not in acme_forms
    assert "acme sync" in acme_keys
    assert "beta sync" not in acme_keys
    assert "Beta poll" in beta_forms
    assert "Acme survey" not in beta_forms
    assert "beta sync" in beta_keys
    assert "acme sync" not in beta_keys


async def test_switching_returns_to_the_page_but_leaves_a_form_of_the_old_organization(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    user, _, beta, acme_form, _ = await _two_organizations(session)
    browser = await signed_in(user)

    from_keys = await _switch(browser, beta, "/settings/keys")
    from_form = await _switch(browser, beta, f"/forms/{acme_form.id}")
    from_elsewhere = await _switch(browser, beta, "https://evil.example/")

    assert from_keys == "/settings/keys"
    assert from_form == "/forms"
    assert from_elsewhere == "/forms"


async def test_a_key_generated_after_switching_belongs_to_the_new_organization(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    user, _, beta, _, beta_form = await _two_organizations(session)
    browser = await signed_in(user)

    await _switch(browser, beta)
    page = await browser.submit("/settings/keys", {"name": "new", "scopes": ["forms:read"]})
    secret = new_key_secret(page.text)

    assert secret is not None
    listed = await api.get("/v1/forms", secret)
    assert [form["id"] for form in listed.json()["data"]] == [beta_form.id]


async def test_switching_to_an_organization_you_are_not_in_is_refused(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    user, *_ = await _two_organizations(session)
    elsewhere = await organization_service.create(session, "Elsewhere")
    await create_form(session, elsewhere, title="Not yours")
    await session.commit()
    browser = await signed_in(user)

    page = await browser.submit("/settings/organization", {"organization_id": elsewhere.id})
    forms = await browser.get("/forms")

    assert "You are not a member of that organization." in page.text
    assert "Acme survey" in forms.text
    assert "Not yours" not in forms.text


async def test_another_organizations_form_is_not_found_like_a_missing_one(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    acme = await organization_service.create(session, "Acme")
    beta = await organization_service.create(session, "Beta")
    user = await add_member(session, acme, Role.owner)
    beta_form = await create_form(session, beta, title="Beta poll")
    await session.commit()
    browser = await signed_in(user)

    other = await browser.get(f"/forms/{beta_form.id}")
    missing = await browser.get("/forms/frm_00000000000000000000000000")
    other_csv = await browser.get(f"/forms/{beta_form.id}/submissions.csv")

    assert other.status_code == missing.status_code == 404
    assert other.text == missing.text
    assert "There is no such form in this organization." in other.text
    assert "Beta poll" not in other.text
    assert other_csv.status_code == 404
    assert "Beta poll" not in other_csv.text


async def test_a_form_of_an_organization_you_are_in_but_not_working_in_is_not_shown(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    user, _, _, _, beta_form = await _two_organizations(session)
    browser = await signed_in(user)  # working in Acme

    page = await browser.get(f"/forms/{beta_form.id}")

    assert page.status_code == 404
