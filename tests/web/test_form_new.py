"""Making a form in the settings area (the builder's first steps): from a
template, from blank, or from a form's JSON pasted or uploaded; a form's
JSON downloaded, and a form duplicated. Each goes through the service the
API uses; a viewer, a forged post and hostile input change nothing."""

import json
import re
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.form import gallery
from formsapi.models import Form, Organization, Role
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission
from tests.support.settled import events_settled
from tests.web.conftest import Browser, SignedIn, add_member

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write", "events:read"]


async def _owner(
    session: AsyncSession, signed_in: SignedIn, role: str = Role.owner
) -> tuple[Organization, Browser, str]:
    organization = await create_org(session)
    member = await add_member(session, organization, role)
    _, secret = await create_key(session, organization, scopes=SCOPES)
    await session.commit()
    return organization, await signed_in(member), secret


async def _forms(session: AsyncSession, organization: Organization) -> int:
    count = await session.scalar(
        select(func.count()).select_from(Form).where(scoped(Form, organization.id))
    )
    return int(count or 0)


async def _title_and_status(
    session: AsyncSession, organization: Organization, form_id: str
) -> tuple[str, str]:
    found = await session.execute(
        select(Form.title, Form.status).where(scoped(Form, organization.id), Form.id == form_id)
    )
    title, status = found.one()
    return title, status


def _form_id(response: httpx.Response) -> str:
    match = re.search(r"/forms/(frm_[A-Za-z0-9]+)$", str(response.url))
    assert match, response.url
    return match.group(1)


@pytest.mark.parametrize("name", [template.name for template in gallery.TEMPLATES])
async def test_each_template_makes_a_draft_that_publishes(
    session: AsyncSession, signed_in: SignedIn, api: Api, name: str
) -> None:
    _, browser, secret = await _owner(session, signed_in)

    page = await browser.submit("/forms/new", {"how": "template", "template": name})

    form_id = _form_id(page)
    assert "created." in page.text
    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    template = gallery.body(name).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert detail["status"] == "draft"
    assert detail["title"] == template["title"]
    assert [b["type"] for b in detail["blocks"]] == [b["type"] for b in template["blocks"]]
    published = await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    assert published.status_code == 200, published.text


async def test_the_quiz_template_scores_and_ends_as_its_logic_says(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret = await _owner(session, signed_in)
    form_id = _form_id(await browser.submit("/forms/new", {"how": "template", "template": "quiz"}))
    await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    url = f"/v1/forms/{form_id}/submissions"
    right = {"name": "Ada", "q1": "paris", "q2": "seven", "q3": 144, "q4": "yes"}

    perfect = (await api.post(url, secret, json={"answers": right})).json()
    three = (await api.post(url, secret, json={"answers": {**right, "q3": 100}})).json()

    assert (perfect["answers"]["vars.score"], perfect["ending"]) == (4, "perfect")
    assert (three["answers"]["vars.score"], three["ending"]) == (3, "result")


async def test_a_blank_form_is_a_draft_with_its_title_escaped_on_the_page(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, browser, _ = await _owner(session, signed_in)
    title = '<script>alert("x")</script> & Co'

    page = await browser.submit("/forms/new", {"how": "blank", "title": title})

    assert "<script>alert" not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Co" in page.text
    assert '<span class="badge draft">draft</span>' in page.text


async def test_a_title_is_stored_as_the_api_stores_it(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret = await _owner(session, signed_in)
    title = "  bell\x07 \u202eevil\x1b[31m  "

    page = await browser.submit("/forms/new", {"how": "blank", "title": title})
    through_api = await api.post("/v1/forms", secret, json={"title": title.strip()})

    detail = (await api.get(f"/v1/forms/{_form_id(page)}", secret)).json()
    assert detail["title"] == through_api.json()["title"]


@pytest.mark.parametrize(
    ("title", "said"),
    [("", "Give the form a title."), ("x" * 201, "at most 200")],
)
async def test_a_bad_title_is_refused_and_makes_nothing(
    session: AsyncSession, signed_in: SignedIn, title: str, said: str
) -> None:
    organization, browser, _ = await _owner(session, signed_in)

    page = await browser.submit("/forms/new", {"how": "blank", "title": title})

    assert said in page.text
    assert await _forms(session, organization) == 0


async def test_pasted_json_with_errors_lists_each_at_its_block_and_makes_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    document = {
        "title": "Signup",
        "blocks": [
            {"type": "short_text", "key": "name", "title": "Name"},
            {
                "type": "single_choice",
                "key": "plan",
                "title": "Plan",
                "options": [{"value": "team", "label": ""}],
            },
            {"type": "email", "key": "email"},
        ],
    }

    page = await browser.submit("/forms/new", {"how": "json", "json": json.dumps(document)})

    assert page.url.path == "/forms/new"
    assert "JSON has 2 problems, listed below it" in page.text
    assert "Block 2 (“Plan”), options, 1, label" in page.text
    assert "Block 3 (“email”), title" in page.text
    assert 'aria-invalid="true"' in page.text
    assert "&#34;team&#34;" in page.text  # the JSON is shown again, to fix
    assert await _forms(session, organization) == 0


async def test_a_rule_that_cannot_work_is_placed_at_its_rule(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    document = {
        "title": "Logic",
        "blocks": [{"type": "number", "key": "age", "title": "Age"}],
        "logic": [{"if": {"==": [{"var": "agee"}, 1]}, "then": [{"jump": "nowhere"}]}],
    }

    page = await browser.submit("/forms/new", {"how": "json", "json": json.dumps(document)})

    assert "Rule 1, if" in page.text
    assert await _forms(session, organization) == 0


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 40 + "]" * 40, "nests deeper than 32"),
        ('{"title": "x", "blocks": 5}', "Input should be a valid list"),
        ("   ", "Paste the form"),
    ],
)
async def test_json_that_is_no_form_is_refused_clearly(
    session: AsyncSession, signed_in: SignedIn, text: str, said: str
) -> None:
    organization, browser, _ = await _owner(session, signed_in)

    page = await browser.submit("/forms/new", {"how": "json", "json": text})

    assert said in page.text
    assert await _forms(session, organization) == 0


async def test_a_downloaded_form_uploaded_again_is_the_same_form(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    organization, browser, secret = await _owner(session, signed_in)
    original = _form_id(await browser.submit("/forms/new", {"how": "template", "template": "nps"}))
    translation = {
        "title": "Recommandation",
        "blocks": {"nps": {"title": "Nous recommanderiez-vous ?"}},
    }
    changed = await api.patch(
        f"/v1/forms/{original}", secret, json={"translations": {"fr": translation}}
    )
    assert changed.status_code == 200, changed.text

    download = await browser.get(f"/forms/{original}/form.json")
    assert download.headers["content-disposition"].endswith('.json"')
    assert download.headers["x-content-type-options"] == "nosniff"
    uploaded = await browser.client.post(
        "/forms/new",
        data={"how": "json", "csrf_token": browser.csrf},
        files={"file": ("nps.json", download.content, "application/json")},
    )
    assert uploaded.status_code == 303, uploaded.text
    copy = uploaded.headers["location"].rsplit("/", 1)[1]

    again = await browser.get(f"/forms/{copy}/form.json")
    assert orjson.loads(again.content) == orjson.loads(download.content)
    assert orjson.loads(download.content)["translations"]["fr"]["title"] == "Recommandation"
    assert await _forms(session, organization) == 2


async def test_an_uploaded_file_that_is_not_utf8_is_refused(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)

    uploaded = await browser.client.post(
        "/forms/new",
        data={"how": "json", "csrf_token": browser.csrf},
        files={"file": ("form.json", b'{"title": "\xff"}', "application/json")},
    )
    page = await browser.get(uploaded.headers["location"])

    assert "The file is not UTF-8 text." in page.text
    assert await _forms(session, organization) == 0


async def test_duplicate_makes_a_draft_copy_without_its_submissions(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    organization, browser, secret = await _owner(session, signed_in)
    form = await create_form(session, organization, title="Survey", status="published")
    await create_submission(session, form)
    await session.commit()

    page = await browser.submit(f"/forms/{form.id}/duplicate")

    copy = _form_id(page)
    assert copy != form.id
    detail = (await api.get(f"/v1/forms/{copy}", secret)).json()
    original = (await api.get(f"/v1/forms/{form.id}", secret)).json()
    assert (detail["title"], detail["status"], detail["responseCount"]) == (
        "Copy of Survey",
        "draft",
        0,
    )
    assert detail["blocks"] == original["blocks"]


async def test_a_viewer_is_offered_nothing_and_refused_whatever_it_posts(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in, Role.viewer)
    form = await create_form(session, organization, title="Survey")
    await session.commit()

    listing = await browser.get("/forms")
    page = await browser.get(f"/forms/{form.id}")
    new = await browser.get("/forms/new")
    refusals = []
    for path, data in (
        ("/forms/new", {"how": "blank", "title": "Mine"}),
        ("/forms/new", {"how": "template", "template": "nps"}),
        (f"/forms/{form.id}/duplicate", {}),
    ):
        posted = await browser.post(path, data)
        refusals.append(
            (posted.headers["location"], (await browser.get(posted.headers["location"])).text)
        )

    assert 'href="/forms/new"' not in listing.text
    assert "Duplicate" not in page.text
    assert "Download JSON" in page.text  # reading is a viewer's
    assert new.status_code == 403
    assert [where for where, _ in refusals] == ["/forms", "/forms", f"/forms/{form.id}"]
    for _, shown in refusals:
        assert "reads forms; editors, admins and owners make and change them" in shown
    assert await _forms(session, organization) == 1


async def test_a_forged_post_makes_no_form(session: AsyncSession, signed_in: SignedIn) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    form = await create_form(session, organization, title="Survey")
    await session.commit()

    forged = [
        await browser.post("/forms/new", {"how": "blank", "title": "Forged"}, csrf=""),
        await browser.post(
            "/forms/new",
            {"how": "blank", "title": "Forged"},
            headers={"Origin": "https://x.example"},
        ),
        await browser.post(f"/forms/{form.id}/duplicate", csrf=""),
        await browser.post(f"/forms/{form.id}/status", {"status": "closed"}, csrf=""),
        await browser.post(
            f"/forms/{form.id}/settings",
            {"title": "Forged", "slug": "forged"},
            headers={"Origin": "https://x.example"},
        ),
    ]

    assert [r.status_code for r in forged] == [403] * 5
    assert await _forms(session, organization) == 1
    assert await _title_and_status(session, organization, form.id) == ("Survey", "published")


async def test_another_organizations_form_cannot_be_downloaded_or_duplicated(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    other = await create_org(session)
    theirs = await create_form(session, other, title="Theirs")
    await session.commit()

    download = await browser.get(f"/forms/{theirs.id}/form.json")
    missing = await browser.get("/forms/frm_01HZZZZZZZZZZZZZZZZZZZZZZZ/form.json")
    refused = [
        await browser.submit(f"/forms/{theirs.id}/duplicate"),
        await browser.submit(f"/forms/{theirs.id}/status", {"status": "closed"}),
        await browser.submit(f"/forms/{theirs.id}/settings", {"title": "Mine", "slug": "mine"}),
    ]

    assert download.status_code == missing.status_code == 404
    assert "Theirs" not in download.text
    for page in refused:
        assert "There is no such form in this organization." in page.text
    assert await _forms(session, organization) == 0
    assert await _title_and_status(session, other, theirs.id) == ("Theirs", "published")


async def test_a_draft_is_published_closed_reopened_and_archived_from_its_page(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret = await _owner(session, signed_in)
    form_id = _form_id(
        await browser.submit("/forms/new", {"how": "template", "template": "contact"})
    )
    url = f"/v1/forms/{form_id}/submissions"
    answers = {"name": "Ada", "email": "ada@example.com", "topic": "sales", "message": "Hi"}
    assert (await api.post(url, secret, json={"answers": answers})).status_code == 409

    published = await browser.submit(f"/forms/{form_id}/status", {"status": "published"})
    taken = await api.post(url, secret, json={"answers": answers})
    closed = await browser.submit(f"/forms/{form_id}/status", {"status": "closed"})
    refused = await api.post(url, secret, json={"answers": answers})
    reopened = await browser.submit(f"/forms/{form_id}/status", {"status": "published"})
    unconfirmed = await browser.submit(f"/forms/{form_id}/status", {"status": "archived"})
    archived = await browser.submit(
        f"/forms/{form_id}/status", {"status": "archived", "confirm": "yes"}
    )

    assert "“Contact us” is published." in published.text
    assert taken.status_code == 201
    assert "“Contact us” is closed." in closed.text
    assert ">Reopen</button>" in closed.text
    assert refused.status_code == 409
    assert "is published." in reopened.text
    assert "Tick the box to confirm" in unconfirmed.text
    assert "“Contact us” is archived." in archived.text
    assert "Status and settings" not in archived.text  # nothing left to change
    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert detail["status"] == "archived"
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret, params={"types": "form.status_changed"})).json()
    assert [(e["data"]["from"], e["data"]["to"]) for e in events["data"]] == [
        ("draft", "published"),
        ("published", "closed"),
        ("closed", "published"),
        ("published", "archived"),
    ]


async def test_a_status_change_the_api_refuses_is_refused_on_the_page_too(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    form = await create_form(session, organization, title="Draft", status="draft")
    await session.commit()

    closing = await browser.submit(f"/forms/{form.id}/status", {"status": "closed"})
    made_up = await browser.submit(f"/forms/{form.id}/status", {"status": "deleted"})

    assert "A draft form cannot become closed; it can become: published, archived" in closing.text
    assert "Choose publish, close or archive." in made_up.text


async def test_title_and_slug_are_changed_as_the_api_checks_them(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    organization, browser, secret = await _owner(session, signed_in)
    form = await create_form(session, organization, title="Old", status="draft")
    other = await create_form(session, organization, title="Other", status="draft")
    await session.commit()

    saved = await browser.submit(f"/forms/{form.id}/settings", {"title": "New", "slug": "new-one"})
    bad = await browser.submit(f"/forms/{form.id}/settings", {"title": "New", "slug": "Not OK"})
    taken = await browser.submit(f"/forms/{form.id}/settings", {"title": "New", "slug": other.slug})

    assert "Saved." in saved.text
    detail = (await api.get(f"/v1/forms/{form.id}", secret)).json()
    assert (detail["title"], detail["slug"]) == ("New", "new-one")
    assert "The slug: String should match pattern" in bad.text
    huge = await browser.submit(f"/forms/{form.id}/settings", {"title": "New", "slug": "a" * 5000})
    assert "The slug: String should have at most 100 characters." in huge.text
    assert f"Another form of this organization has the slug &#39;{other.slug}&#39;." in taken.text


async def test_a_viewer_cannot_change_a_forms_status_or_settings(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    organization, browser, secret = await _owner(session, signed_in, Role.viewer)
    form = await create_form(session, organization, title="Draft", status="draft")
    await session.commit()

    page = await browser.get(f"/forms/{form.id}")
    status = await browser.submit(f"/forms/{form.id}/status", {"status": "published"})
    settings = await browser.submit(f"/forms/{form.id}/settings", {"title": "Mine", "slug": "mine"})

    assert "Status and settings" not in page.text
    for shown in (status, settings):
        assert "reads forms; editors, admins and owners make and change them" in shown.text
    detail = (await api.get(f"/v1/forms/{form.id}", secret)).json()
    assert (detail["status"], detail["title"]) == ("draft", "Draft")


@pytest.mark.parametrize(
    ("translations", "said"),
    [
        ({"fr": {"blocks": {"²": {"title": "x"}}}}, "translations, fr, blocks, ²"),
        ({"fr": {"blocks": {"7": {"title": "x"}}}}, "translations, fr, blocks, 7"),
        ({"fr": {"blocks": {"1" * 5000: {"title": "x"}}}}, "translations, fr, blocks, 111"),
    ],
)
async def test_a_translation_of_what_the_form_lacks_is_placed_by_its_key(
    session: AsyncSession, signed_in: SignedIn, translations: dict[str, Any], said: str
) -> None:
    organization, browser, _ = await _owner(session, signed_in)
    document = {
        "title": "T",
        "blocks": [{"type": "short_text", "key": "name", "title": "Name"}],
        "translations": translations,
    }

    page = await browser.submit("/forms/new", {"how": "json", "json": json.dumps(document)})

    assert said in page.text
    assert await _forms(session, organization) == 0


async def test_an_over_long_paste_is_refused_on_the_page(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _ = await _owner(session, signed_in)

    page = await browser.submit("/forms/new", {"how": "json", "json": " " * 500_001 + "{}"})

    assert "The JSON pasted is over 500,000 characters." in page.text
    assert await _forms(session, organization) == 0


async def test_a_copy_of_a_long_title_keeps_no_trailing_space(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    organization, browser, secret = await _owner(session, signed_in)
    form = await create_form(session, organization, title="x" * 191 + " yyyyyyyy")
    await session.commit()

    copy = _form_id(await browser.submit(f"/forms/{form.id}/duplicate"))

    title = (await api.get(f"/v1/forms/{copy}", secret)).json()["title"]
    assert title == "Copy of " + "x" * 191  # cut at 200, the space gone
