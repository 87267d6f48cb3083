"""The settings area's Respondents' data page (owners and admins find,
download and erase one person's data across the organization's forms, each
download and erasure audited) and a form's retention on its Status and
settings panel (editors, admins and owners)."""

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.form import service as form_service
from formsapi.language.blocks import BlockList
from formsapi.language.definition import Definition, HiddenField
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission
from tests.web.conftest import SignedIn, add_member

ADA = "ada@example.com"
BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name"},
    {"type": "email", "key": "email", "title": "Your email"},
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _organization(session: AsyncSession, title: str = "Workshop") -> tuple[Organization, Any]:
    organization = await create_org(session)
    form = await create_form(session, organization, title=title, blocks=BLOCKS)
    return organization, form


async def _retention(session: AsyncSession, organization: Organization, form_id: str) -> int | None:
    session.expunge_all()
    found = await session.execute(
        select(Form.retention_days).where(scoped(Form, organization.id), Form.id == form_id)
    )
    days = found.scalar_one()
    await session.rollback()  # SQLite: the page's writes wait for none of this
    return days


async def test_an_admin_finds_downloads_and_erases_a_respondent_with_an_audit_trail(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, form = await _organization(session, "Workshop sign-up")
    admin = await add_member(session, organization, Role.admin)
    _, secret = await create_key(session, organization)
    theirs = await create_submission(
        session, form, answers={"name": "Ada Lovelace", "email": "Ada@Example.com"}
    )
    kept = await create_submission(session, form, answers={"name": "Bob", "email": "b@x.org"})
    other, other_form = await _organization(session)
    elsewhere = await create_submission(session, other_form, answers={"email": ADA})
    _, other_secret = await create_key(session, other)
    await session.commit()
    browser = await signed_in(admin)

    page = await browser.get("/settings/respondents")
    found = await browser.post("/settings/respondents/find", {"by": "email", "value": ADA})
    download = await browser.post("/settings/respondents/export", {"by": "email", "value": ADA})
    unconfirmed = await browser.submit("/settings/respondents/erase", {"by": "email", "value": ADA})
    erased = await browser.submit(
        "/settings/respondents/erase", {"by": "email", "value": ADA, "confirm": "yes"}
    )

    assert page.status_code == 200
    assert 'href="/settings/respondents" aria-current="page"' in page.text
    assert found.status_code == 200
    assert "1 submission and 0 partial responses" in found.text
    assert "Workshop sign-up" in found.text
    assert theirs.id in found.text
    assert kept.id not in found.text
    assert elsewhere.id not in found.text
    assert "Ada Lovelace" not in found.text  # listed, not shown: the download holds the answers
    assert download.headers["content-disposition"] == 'attachment; filename="respondent-data.json"'
    assert [s["answers"]["name"] for s in download.json()["submissions"]] == ["Ada Lovelace"]
    assert "Tick the box to confirm" in unconfirmed.text
    assert "Erased 1 submission and 0 partial responses." in erased.text
    listed = (await api.get(f"/v1/forms/{form.id}/submissions", secret)).json()["data"]
    assert [s["id"] for s in listed] == [kept.id]
    theirs_left = (await api.get(f"/v1/forms/{other_form.id}/submissions", other_secret)).json()
    assert [s["id"] for s in theirs_left["data"]] == [elsewhere.id]
    entries = (await api.get("/v1/audit-entries", secret)).json()["data"]
    assert [(e["action"], e["count"], e["actor"]) for e in entries] == [
        ("respondent.erased", 1, {"kind": "member", "id": admin.id, "name": admin.email}),
        ("respondent.exported", 1, {"kind": "member", "id": admin.id, "name": admin.email}),
    ]
    # The page lists them, and never what was looked for.
    audit_table = erased.text.partition("Downloads and erasures")[2]
    assert "Erased" in audit_table
    assert "Downloaded" in audit_table
    assert ADA not in erased.text.lower()


async def test_a_hidden_field_is_offered_and_bad_searches_are_said(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await form_service.create(
        session,
        organization.id,
        "Members",
        BlockList.validate_python(BLOCKS),
        definition=Definition(hidden_fields=[HiddenField(key="member_id")]),
        status="published",
    )
    await create_submission(session, form, answers={"email": "x@y.z", "member_id": "M-1'\"<b>"})
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get("/settings/respondents")
    found = await browser.post(
        "/settings/respondents/find", {"by": "field", "field": "member_id", "value": "M-1'\"<b>"}
    )
    refusals = [
        await browser.submit("/settings/respondents/find", data)
        for data in (
            {"by": "email", "value": "   "},
            {"by": "field", "field": "no such;key", "value": "x"},
            {"by": "phone", "value": "x"},
            {"by": "email", "value": "a" * 300 + "@x.org"},
        )
    ]

    assert '<option value="member_id"' in page.text
    assert "1 submission and 0 partial responses" in found.text
    assert 'value="M-1&#39;&#34;&lt;b&gt;"' in found.text  # carried on, escaped
    assert "Type the email address" in refusals[0].text
    assert "Choose one of your forms&#39; hidden fields." in refusals[1].text
    assert "Find by the email address or by a hidden field." in refusals[2].text
    assert "at most 254 characters" in refusals[3].text


async def test_editors_viewers_and_forged_posts_erase_nothing(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, form = await _organization(session)
    editor = await add_member(session, organization, Role.editor)
    viewer = await add_member(session, organization, Role.viewer)
    admin = await add_member(session, organization, Role.admin)
    _, secret = await create_key(session, organization)
    theirs = await create_submission(session, form, answers={"email": ADA})
    await session.commit()
    erase = {"by": "email", "value": ADA, "confirm": "yes"}

    for member in (editor, viewer):
        browser = await signed_in(member)
        forms_page = await browser.get("/forms")
        closed = await browser.get("/settings/respondents")
        refused = await browser.post("/settings/respondents/erase", erase)
        assert 'href="/settings/respondents"' not in forms_page.text
        assert closed.status_code == 403
        assert "Only owners and admins" in closed.text
        assert refused.status_code == 403
    forged = await (await signed_in(admin)).post("/settings/respondents/erase", erase, csrf="")

    assert forged.status_code == 403
    assert "This page had expired" in forged.text
    listed = (await api.get(f"/v1/forms/{form.id}/submissions", secret)).json()["data"]
    assert [s["id"] for s in listed] == [theirs.id]
    assert (await api.get("/v1/audit-entries", secret)).json()["data"] == []


async def test_an_editor_sets_how_long_a_forms_submissions_are_kept(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, form = await _organization(session, "Contact")
    editor = await add_member(session, organization, Role.editor)
    viewer = await add_member(session, organization, Role.viewer)
    other = await create_org(session)
    stranger = await add_member(session, other, Role.owner)
    await session.commit()
    browser = await signed_in(editor)
    url = f"/forms/{form.id}/retention"

    page = await browser.get(f"/forms/{form.id}")
    set_days = await browser.submit(url, {"retention": "days", "days": "90"})
    days = await _retention(session, organization, form.id)
    wrong = [
        await browser.submit(url, {"retention": "days", "days": value})
        for value in ("0", "3651", "ten", "1.5", "", "٣")
    ]
    still = await _retention(session, organization, form.id)
    forever = await browser.submit(url, {"retention": "forever", "days": "90"})
    as_viewer = await (await signed_in(viewer)).submit(url, {"retention": "days", "days": "1"})
    foreign = await (await signed_in(stranger)).submit(url, {"retention": "days", "days": "1"})

    assert "How long submissions are kept" in page.text
    assert '<input type="radio" name="retention" value="forever" checked>' in page.text
    assert "Submissions older than 90 days are now deleted within the hour." in set_days.text
    assert '<input type="radio" name="retention" value="days" checked>' in set_days.text
    assert 'name="days" type="number" min="1" max="3650"' in set_days.text
    assert 'value="90"' in set_days.text
    assert days == 90
    assert all("a whole number from 1 to 3650" in w.text for w in wrong)
    assert still == 90
    assert "Submissions are now kept until deleted." in forever.text
    assert "reads forms; editors, admins and owners make and change them" in as_viewer.text
    assert "There is no such form in this organization." in foreign.text
    assert await _retention(session, organization, form.id) is None
