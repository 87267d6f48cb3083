"""The form builder: a draft changed block by block (add, edit, move,
duplicate, remove, a condition made from a question), reviewed and
published as the form's next version through the service the API uses;
versions read and restored; a late save refused with what changed; roles,
forged posts and hostile input. Both engines."""

import html
import json
import re
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Organization, Role
from formsapi.web.builder import Made, condition, made, said
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.support.hostile_text import FORM, form_body
from tests.web.conftest import Browser, SignedIn, add_member

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
BLOCKS: list[dict[str, Any]] = [
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "email", "key": "email", "title": "Your email"},
]
REVISION = re.compile(r'name="revision" value="([\d.]+)"')


async def _setup(
    session: AsyncSession, signed_in: SignedIn, role: str = Role.editor
) -> tuple[Organization, Browser, str, str]:
    organization = await create_org(session)
    member = await add_member(session, organization, role)
    _, secret = await create_key(session, organization, scopes=SCOPES)
    form = await create_form(session, organization, title="Sign-up", blocks=BLOCKS)
    await session.commit()
    return organization, await signed_in(member), secret, form.id


def _titles(blocks: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(b["type"], b["key"], b["title"]) for b in blocks]


def _revision(page: httpx.Response) -> str:
    found = REVISION.search(page.text)
    assert found, page.text
    return found[1]


async def _act(browser: Browser, path: str, data: dict[str, Any] | None = None) -> httpx.Response:
    """Post one of the builder's forms with the revision its page shows."""
    page = await browser.get(path.split("/edit")[0] + "/edit")
    return await browser.submit(path, {"revision": _revision(page), **(data or {})})


async def _draft_blocks_of(browser: Browser, form_id: str) -> list[dict[str, Any]]:
    page = await browser.get(f"/forms/{form_id}/edit/json")
    text = re.search(r'<textarea id="json"[^>]*>(.*?)</textarea>', page.text, re.S)
    assert text, page.text
    blocks: list[dict[str, Any]] = json.loads(html.unescape(text[1]))["blocks"]
    return blocks


async def test_a_form_edited_block_by_block_publishes_as_the_api_stores_it(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    edit = f"/forms/{form_id}/edit"

    added = await _act(browser, f"{edit}/add", {"type": "single_choice", "position": "0"})
    assert str(added.url).endswith(f"{edit}/blocks/1")
    assert "Block 2 added" in added.text
    saved = await browser.submit(
        f"{edit}/blocks/1",
        {
            "revision": _revision(added),
            "key": "plan",
            "title": "Which plan?",
            "options": "free | Free\nPro plan",
            "required": "on",
            "shuffle": "none",
        },
    )
    assert "Saved." in saved.text
    condition = await browser.submit(
        f"{edit}/blocks/1/condition/visibleIf",
        {"revision": _revision(saved), "question": "name", "operator": "filled"},
    )
    assert "Condition saved." in condition.text
    moved = await _act(browser, f"{edit}/blocks/2/up")
    assert "moved to position 2" in moved.text
    await _act(browser, f"{edit}/blocks/0/duplicate")
    removed = await _act(browser, f"{edit}/blocks/1/remove")
    assert "removed." in removed.text

    draft = await _draft_blocks_of(browser, form_id)
    assert [b["key"] for b in draft] == ["name", "email", "plan"]
    assert draft[2] == {
        "type": "single_choice",
        "key": "plan",
        "title": "Which plan?",
        "required": True,
        "visibleIf": {"!!": [{"var": "name"}]},
        "options": [{"value": "free", "label": "Free"}, {"value": "pro_plan", "label": "Pro plan"}],
        "shuffle": "none",
    }
    # Nothing is published yet: the API still reads version 1.
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 1

    review = await browser.get(f"/forms/{form_id}/publish")
    assert "Publishing makes version 2" in review.text
    assert "“Which plan?” added" in review.text
    version = re.search(r'name="version" value="(\d+)"', review.text)
    assert version is not None
    published = await browser.submit(
        f"/forms/{form_id}/publish", {"revision": _revision(review), "version": version[1]}
    )
    assert "Version 2 of “Sign-up” is published." in published.text

    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert detail["version"] == 2
    assert detail["status"] == "published"  # a draft form is published with it
    assert detail["blocks"] == draft  # byte for byte what the builder showed
    # The same blocks sent over the API make no new version: stored the same.
    again = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": draft})
    assert again.json()["version"] == 2
    first = (await api.get(f"/v1/forms/{form_id}", secret, params={"version": 1})).json()
    assert [b["key"] for b in first["blocks"]] == ["name", "email"]
    answered = await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"name": "Ada", "plan": "free"}},
    )
    assert answered.status_code == 201, answered.text
    assert (await browser.get(f"/forms/{form_id}/publish")).text.count("Nothing to publish") == 1


async def test_a_save_made_on_an_older_draft_is_refused_and_told_what_changed(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, ada, _, form_id = await _setup(session, signed_in)
    admin = await add_member(session, organization, Role.admin)
    await session.commit()
    grace = await signed_in(admin)
    edit = f"/forms/{form_id}/edit"
    adas_page = await ada.get(edit)
    graces_page = await grace.get(edit)

    await ada.submit(
        f"{edit}/add", {"revision": _revision(adas_page), "type": "yes_no", "position": "-1"}
    )
    late = await grace.post(f"{edit}/blocks/0/remove", {"revision": _revision(graces_page)})

    assert late.status_code == 303
    page = await grace.get(late.headers["location"])
    assert "changed this form&#39;s draft" in page.text
    assert "your change was not saved" in page.text
    assert "What changed meanwhile" in page.text
    assert "“New yes / no question” added" in page.text
    blocks = await _draft_blocks_of(grace, form_id)
    assert [b.get("key") for b in blocks] == ["name", "email", "yes_no"]  # nothing removed


async def test_a_page_opened_before_the_form_changed_over_the_api_changes_nothing(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    """No draft saved yet: the builder shows the form as it is, which a
    program may change meanwhile. Removing "the second block" of a page
    showing the old blocks must not remove another one."""
    _, browser, secret, form_id = await _setup(session, signed_in)
    edit = f"/forms/{form_id}/edit"
    page = await browser.get(edit)
    company = {"type": "short_text", "key": "company", "title": "Company"}
    await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": [company, *BLOCKS]})

    late = await browser.post(f"{edit}/blocks/1/remove", {"revision": _revision(page)})

    shown = await browser.get(late.headers["location"])
    assert "your change was not saved" in shown.text
    assert "“Company” added" in shown.text
    blocks = await _draft_blocks_of(browser, form_id)
    assert [b["key"] for b in blocks] == ["company", "name", "email"]


async def test_a_draft_past_the_size_of_a_form_is_not_saved(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, browser, _, form_id = await _setup(session, signed_in)
    edit = f"/forms/{form_id}/edit"
    many = [{"type": "short_text", "key": f"q{n}", "title": f"Q{n}"} for n in range(500)]
    page = await browser.get(f"{edit}/json")
    await browser.submit(
        f"{edit}/json",
        {"revision": _revision(page), "json": json.dumps({"title": "Big", "blocks": many})},
    )
    page = await browser.get(edit)

    past = await browser.post(f"{edit}/blocks/0/duplicate", {"revision": _revision(page)})

    shown = await browser.get(past.headers["location"])
    assert "at most 500 blocks" in shown.text
    assert len(await _draft_blocks_of(browser, form_id)) == 500
    far = await browser.get(f"/forms/{form_id}/versions/99999999999")
    assert far.status_code == 400  # a page, not a 500
    stale = await browser.post(
        f"{edit}/json", {"revision": "2147483648.1", "json": '{"title": "T", "blocks": []}'}
    )
    assert stale.status_code == 303
    assert "your change was not saved" in (await browser.get(stale.headers["location"])).text


async def test_publishing_warns_where_answers_are_touched_and_versions_restore(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada"}})
    page = await browser.get(f"/forms/{form_id}/edit/json")
    document = {
        "title": "Sign-up",
        "blocks": [
            {"type": "number", "key": "name", "title": "Your age"},
            {"type": "heading", "text": "Thanks"},
        ],
    }
    await browser.submit(
        f"/forms/{form_id}/edit/json", {"revision": _revision(page), "json": json.dumps(document)}
    )

    review = await browser.get(f"/forms/{form_id}/publish")
    assert "Existing answers are affected" in review.text
    assert "“Your age” changes from short_text to number" in review.text
    assert "“Your email” is removed: the answers to it in the 1 submissions" in review.text
    version = re.search(r'name="version" value="(\d+)"', review.text)
    assert version is not None
    await browser.submit(
        f"/forms/{form_id}/publish", {"revision": _revision(review), "version": version[1]}
    )
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 2

    history = await browser.get(f"/forms/{form_id}/versions")
    assert "Version 1" in history.text
    assert "Version 2" in history.text
    old = await browser.get(f"/forms/{form_id}/versions/1")
    assert "“Your email” removed" in old.text  # from version 1 to the current one
    restored = await browser.submit(
        f"/forms/{form_id}/versions/1/restore", {"revision": _revision(history)}
    )
    assert "Version 1 is the draft now" in restored.text
    assert [b["key"] for b in await _draft_blocks_of(browser, form_id)] == ["name", "email"]
    review = await browser.get(f"/forms/{form_id}/publish")
    await browser.submit(
        f"/forms/{form_id}/publish", {"revision": _revision(review), "version": "2"}
    )
    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert detail["version"] == 3
    assert _titles(detail["blocks"]) == _titles(BLOCKS)
    assert detail["status"] == "published"  # publishing a version leaves the status be


async def test_a_review_older_than_the_form_is_shown_again(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    await _act(browser, f"/forms/{form_id}/edit/add", {"type": "yes_no"})
    review = await browser.get(f"/forms/{form_id}/publish")
    # Meanwhile a program changes the form over the API.
    await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": BLOCKS[:1]})

    stale = await browser.post(
        f"/forms/{form_id}/publish", {"revision": _revision(review), "version": "1"}
    )
    page = await browser.get(stale.headers["location"])
    assert "The form was changed since you reviewed this" in page.text
    assert "it was at version 1, it is at 2" in page.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 2


async def test_an_invalid_draft_is_not_saved_and_each_problem_names_its_block(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, browser, _, form_id = await _setup(session, signed_in)
    edit = f"/forms/{form_id}/edit"
    page = await browser.get(edit)

    clash = await browser.post(
        f"{edit}/blocks/1", {"revision": _revision(page), "key": "name", "title": "Email"}
    )
    shown = await browser.get(clash.headers["location"])
    assert "Not saved" in shown.text
    assert "Block 2 (“Email”), key" in shown.text
    assert "repeats the key of block 0" in shown.text or "keys must be unique" in shown.text
    bad_rule = await browser.post(
        f"{edit}/blocks/1/condition/visibleIf",
        {"revision": _revision(page), "how": "json", "rule": '{"var": "nowhere"}'},
    )
    shown = await browser.get(bad_rule.headers["location"])
    assert "Not saved" in shown.text
    assert [b["key"] for b in await _draft_blocks_of(browser, form_id)] == ["name", "email"]
    assert _revision(await browser.get(edit)) == "0.1"  # no save was made


HOSTILE = [
    "x" * 6000,  # past every text's limit
    "<script>alert(1)</script>",
    "tab\there",
    "nul\x00here",
    "\u202eevil",
    "\ud800",  # a lone surrogate
]


def _fields_of(form_id: str, text: str) -> list[tuple[str, dict[str, str]]]:
    """Every field of the builder's forms, each with `text` in it."""
    edit = f"/forms/{form_id}/edit"
    return [
        (f"{edit}/blocks/0", {"key": "name", "title": text}),
        (f"{edit}/blocks/0", {"key": "name", "title": "Name", "description": text}),
        (f"{edit}/blocks/0", {"key": "name", "title": "Name", "placeholder": text}),
        (f"{edit}/blocks/0", {"key": text, "title": "Name"}),
        (f"{edit}/blocks/0", {"key": "name", "title": "Name", "maxLength": text}),
        (f"{edit}/add", {"type": text}),
        (f"{edit}/blocks/1/condition/visibleIf", {"question": "name", "operator": "==",
                                                  "value": text}),
        (f"{edit}/blocks/1/condition/visibleIf", {"how": "json", "rule": text}),
        (f"{edit}/blocks/1/condition/visibleIf",
         {"how": "json", "rule": json.dumps({"==": [{"var": "name"}, text]})}),
        (f"{edit}/json", {"json": text}),
        (f"{edit}/json", {"json": json.dumps({"title": text, "blocks": BLOCKS})}),
        (f"{edit}/json", {"json": json.dumps({"title": "T", "blocks": [], "logic": [
            {"if": {"==": [{"var": "name"}, text]}, "then": []}]})}),
        (f"{edit}/order", {"order": text}),
        (f"{edit}/translations", {"lang": text}),
        (f"{edit}/translations", {"lang": "fr", "t0": text}),
    ]  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_text_in_every_field_is_refused_or_kept_escaped(
    session: AsyncSession, signed_in: SignedIn, api: Api, text: str
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    failures = []

    for path, fields in _fields_of(form_id, text):
        page = await browser.get(f"/forms/{form_id}/edit")
        body = {"revision": _revision(page), "csrf_token": browser.csrf, **fields}
        posted = await browser.client.post(path, content=form_body(body), headers=FORM)
        if posted.status_code == 422:  # refused as it arrived (a NUL, a lone surrogate)
            continue
        if posted.status_code != 303:
            failures.append(f"{path} {list(fields)}: {posted.status_code}")
            continue
        shown = await browser.get(posted.headers["location"])
        if shown.status_code != 200 or "<script>alert" in shown.text:
            failures.append(f"{path} {list(fields)}: shown {shown.status_code}")

    assert not failures, failures
    # Nothing reached the published form, and the draft is still a form.
    published = (await api.get(f"/v1/forms/{form_id}", secret)).json()["blocks"]
    assert _titles(published) == _titles(BLOCKS)
    assert (await browser.get(f"/forms/{form_id}/publish")).status_code == 200


async def test_a_viewer_reads_the_builder_and_saves_nothing(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, browser, _, form_id = await _setup(session, signed_in, Role.viewer)
    edit = f"/forms/{form_id}/edit"

    page = await browser.get(edit)
    refused = await browser.post(f"{edit}/add", {"revision": "0", "type": "email"})

    assert page.status_code == 200
    assert "Add block" not in page.text
    assert ">Remove<" not in page.text
    assert "Your role reads forms" in page.text
    assert refused.status_code == 303
    shown = await browser.get(refused.headers["location"])
    assert "editors, admins and owners make and change them" in shown.text
    assert "No unpublished changes" in (await browser.get(edit)).text


async def test_forged_posts_and_other_organizations_forms_change_nothing(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    stranger = await create_org(session)
    theirs = await create_form(session, stranger, title="Theirs", blocks=BLOCKS)
    await session.commit()
    edit = f"/forms/{form_id}/edit"

    no_token = await browser.post(f"{edit}/add", {"revision": "0", "type": "email"}, csrf="")
    cross_site = await browser.post(
        f"{edit}/add",
        {"revision": "0", "type": "email"},
        headers={"Origin": "https://evil.example"},
    )
    other = await browser.get(f"/forms/{theirs.id}/edit")
    missing = await browser.get("/forms/frm_doesnotexist0000000000/edit")
    posted_other = await browser.post(
        f"/forms/{theirs.id}/edit/add", {"revision": "0", "type": "email"}
    )

    assert no_token.status_code == 403
    assert cross_site.status_code == 403
    assert other.status_code == missing.status_code == 404
    assert other.text.replace(theirs.id, "X") == missing.text.replace(
        "frm_doesnotexist0000000000", "X"
    )
    assert posted_other.status_code == 303
    assert _revision(await browser.get(edit)) == "0.1"
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 1


async def test_blocks_dropped_in_a_new_order_are_saved_in_it(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    _, browser, _, form_id = await _setup(session, signed_in)
    edit = f"/forms/{form_id}/edit"

    reordered = await _act(browser, f"{edit}/order", {"order": "1,0"})
    assert "Blocks reordered." in reordered.text
    refused = await browser.post(
        f"{edit}/order", {"revision": _revision(reordered), "order": "0,0"}
    )
    shown = await browser.get(refused.headers["location"])

    assert "does not list every block once" in shown.text
    assert [b["key"] for b in await _draft_blocks_of(browser, form_id)] == ["email", "name"]


PAGED: dict[str, Any] = {
    "title": "Sign-up",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "yes_no", "key": "team", "title": "For a team?"},
        {"type": "page_break", "key": "work"},
        {"type": "short_text", "key": "company", "title": "Company of {{name}}"},
        {"type": "page_break", "key": "last"},
        {"type": "email", "key": "email", "title": "Email, {{name}}?", "required": True},
    ],
    "logic": [{"if": {"==": [{"var": "team"}, "no"]}, "then": [{"jump": "last", "after": "team"}]}],
    "endings": [{"key": "done", "title": "Thanks, {{name}}", "text": "We will write."}],
}


def _hidden_fields(page: str) -> dict[str, str]:
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)
    }


async def test_the_preview_walks_the_drafts_pages_and_logic_and_stores_nothing(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    page = await browser.get(f"/forms/{form_id}/edit/json")
    saved = await browser.submit(
        f"/forms/{form_id}/edit/json", {"revision": _revision(page), "json": json.dumps(PAGED)}
    )
    assert "Draft saved." in saved.text
    preview = f"/forms/{form_id}/preview"

    first = await browser.get(preview)
    assert "Preview of the draft" in first.text
    assert "Your name" in first.text
    assert "Company of" not in first.text  # the second page's
    assert "Save and continue later" not in first.text  # a preview keeps no progress
    incomplete = await browser.post(preview, {**_hidden_fields(first.text), "_go": "next"})
    assert incomplete.status_code == 422  # the name is required
    # Not for a team: the logic jumps past the company's page.
    second = await browser.post(
        preview, {**_hidden_fields(first.text), "name": "Ada", "team": "no", "_go": "next"}
    )
    assert second.status_code == 200, second.text
    assert "Email, Ada?" in second.text
    assert "Company of" not in second.text
    ended = await browser.post(
        preview, {**_hidden_fields(second.text), "email": "ada@example.com", "_go": "next"}
    )
    assert "Thanks, Ada" in ended.text
    assert "nothing was stored" in ended.text

    detail = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert detail["responseCount"] == 0
    assert detail["version"] == 1  # the draft is still a draft
    forged = await browser.post(preview, {"name": "Ada", "_page": "0"}, csrf="")
    assert forged.status_code == 403


async def test_translations_side_by_side_mark_what_is_missing_and_publish(
    session: AsyncSession, signed_in: SignedIn, api: Api
) -> None:
    _, browser, secret, form_id = await _setup(session, signed_in)
    translations = f"/forms/{form_id}/edit/translations"
    page = await browser.get(translations)

    added = await browser.submit(translations, {"revision": _revision(page), "lang": "fr"})
    assert "en → fr" in added.text
    assert "<strong>3</strong> of 3 texts missing" in added.text  # title, two questions
    fields = dict(
        re.findall(r'<label class="visually-hidden" for="(t\d+)">([^<]*)</label>', added.text)
    )
    assert fields == {
        "t0": "Title in fr",
        "t1": "Block 1, title in fr",
        "t2": "Block 2, title in fr",
    }
    saved = await browser.submit(
        translations,
        {"revision": _revision(added), "lang": "fr", "t0": "Inscription", "t1": "Votre nom"},
    )
    assert "<strong>1</strong> of 3 texts missing" in saved.text
    assert 'value="Votre nom"' in saved.text
    refused = await browser.post(translations, {"revision": _revision(saved), "lang": "<script>"})
    shown = await browser.get(refused.headers["location"])
    assert "Give a language tag" in shown.text

    review = await browser.get(f"/forms/{form_id}/publish")
    assert (
        "The form&#39;s translations changed" in review.text
        or "translations changed" in review.text
    )
    await browser.submit(
        f"/forms/{form_id}/publish", {"revision": _revision(review), "version": "1"}
    )
    french = (await api.get(f"/v1/forms/{form_id}", secret, params={"lang": "fr"})).json()
    assert french["title"] == "Inscription"
    assert french["blocks"][0]["title"] == "Votre nom"
    assert french["blocks"][1]["title"] == "Your email"  # missing: in the form's own


async def test_a_forms_settings_say_where_it_may_be_framed_and_lead_to_the_builder(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization, browser, _, form_id = await _setup(session, signed_in)
    page = await browser.get(f"/forms/{form_id}")
    assert 'Use the organization\'s list <span class="hint">(currently: no site)' in page.text
    organization.embed_origins = ["https://shop.example"]
    await session.commit()

    page = await browser.get(f"/forms/{form_id}")

    assert "(currently: https://shop.example)" in page.text
    assert f'href="/forms/{form_id}/edit"' in page.text


@pytest.mark.parametrize(
    ("operator", "value"),
    [("==", "team"), ("!=", "free"), ("<", 3), ("<=", 2.5), (">", 0), (">=", 9),
     ("in", "api"), ("not in", "api"), ("filled", ""), ("empty", "")],
)  # fmt: skip
def test_a_condition_made_on_the_page_is_read_back_into_its_fields(
    operator: str, value: object
) -> None:
    assert made(condition("plan", operator, value)) == Made("plan", operator, value)


def test_a_rule_the_fields_cannot_make_is_left_to_json_logic() -> None:
    both = {"and": [{"==": [{"var": "a"}, 1]}, {"==": [{"var": "b"}, 2]}]}
    computed = {"==": [{"var": "a"}, {"var": "b"}]}
    flag = {"==": [{"var": "a"}, True]}
    assert [made(rule) for rule in (both, computed, flag, None)] == [None] * 4
    asked = [{"key": "plan", "type": "single_choice", "title": "Plan",
              "options": [{"value": "team", "label": "Team"}]}]  # fmt: skip
    assert said(made({"==": [{"var": "plan"}, "team"]}), asked) == "\u201cPlan\u201d is Team"
    assert said(made({"<": [{"var": "plan"}, "team"]}), asked) is None  # no such test for a choice
