"""The form builder in Debian's Chromium driven by Playwright, against the
README's `formsapi serve --demo`: a form made from a template, a block of
every type added, a condition set from the rule editor, blocks reordered
with the keyboard and by dragging, the draft previewed, published,
answered on the hosted page, changed and published as version 3, a
translation begun side by side, and the versions read over the API. Every
builder screen is saved at laptop and phone widths
(test-artifacts/screenshots/6x-builder-*), and axe-core finds nothing
serious on them.

A file of its own: the suite runs files side by side."""

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from formsapi.web.builder import TYPE_NAMES
from tests.conftest import service_unavailable
from tests.e2e.test_browser import (
    AXE,
    Site,
    api,
    axe_violations,
    chromium,
    generate_key,
    shoot_at_both_widths,
    sign_in,
    site,  # noqa: F401 - the module's server, as the settings area's tests have it
)
from tests.e2e.windows import LAPTOP, Windows


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("6?-builder*.png") as launched:
        yield launched


def keys_in_order(page: Page) -> list[str]:
    return page.locator("#builder-blocks li code").all_inner_texts()


def test_a_form_is_built_previewed_published_answered_and_changed_in_the_builder(
    windows: Windows,
    site: Site,  # noqa: F811
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "builder", "forms:read", "submissions:read")
    page.goto(f"{site.url}/forms/new")
    page.get_by_role("button", name="Use this template: Net Promoter Score").click()
    page.get_by_role("link", name="Edit", exact=True).click()
    expect(
        page.get_by_role("heading", name=re.compile("Edit “Net Promoter Score”"))
    ).to_be_visible()
    builder = page.url
    form_id = builder.split("/forms/")[1].split("/")[0]
    shoot_at_both_widths(windows, page, "60-builder")

    # A block of every type, each added at the end and landing on its editor.
    for block_type in TYPE_NAMES:
        page.goto(builder)
        page.get_by_label("Kind of block").select_option(block_type)
        page.get_by_role("button", name="Add block").click()
        expect(page.get_by_role("status")).to_contain_text("added")
        if block_type == "single_choice":
            shoot_at_both_widths(windows, page, "61-builder-block")
    page.goto(builder)
    expect(page.locator("#builder-blocks > li")).to_have_count(3 + len(TYPE_NAMES))

    # A condition from the rule editor: the email question shows for promoters only.
    page.locator("#builder-blocks li", has_text="New email question").get_by_role(
        "link", name=re.compile("Edit block")
    ).click()
    rule = page.get_by_role("region", name="Show only when")
    rule.get_by_label("Question").select_option("nps")
    rule.get_by_label("Test").select_option(label="is at least")
    rule.get_by_label("Value").fill("9")
    rule.get_by_role("button", name="Set condition").click()
    expect(page.get_by_role("status")).to_contain_text("Condition saved.")
    # Said in words, and the fields set to it, ready to change.
    rule = page.get_by_role("region", name="Show only when")
    expect(rule).to_contain_text("is at least 9")
    expect(rule.get_by_label("Question")).to_have_value("nps")
    expect(rule.get_by_label("Test")).to_have_value(">=")
    expect(rule.get_by_label("Value")).to_have_value("9")
    expect(rule.get_by_label("Rule")).to_have_value('{">=":[{"var":"nps"},9]}')
    shoot_at_both_widths(windows, page, "62-builder-condition")

    # Reordered from the keyboard: focus block 2's Up button and press Enter.
    page.goto(builder)
    assert keys_in_order(page)[:2] == ["nps", "reason"]
    page.get_by_role("button", name="Up: block 2", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("moved to position 1")
    assert keys_in_order(page)[:2] == ["reason", "nps"]
    # And by dragging block 1 by its handle below block 2.
    first = page.locator("#builder-blocks > li").nth(0)
    second = page.locator("#builder-blocks > li").nth(1)
    first.locator(".handle").drag_to(second, target_position={"x": 20, "y": 40})
    expect(page.get_by_role("status")).to_contain_text("Blocks reordered.")
    assert keys_in_order(page)[:2] == ["nps", "reason"]

    # The preview runs the draft's logic: a 9 shows the email question.
    page.get_by_role("link", name="Preview").click()
    expect(page.get_by_text("Preview of the draft")).to_be_visible()
    email = page.get_by_label("New email question")
    expect(email).to_be_hidden()
    page.locator("input[name=nps][value='9']").check()
    expect(email).to_be_visible()
    shoot_at_both_widths(windows, page, "63-builder-preview")

    page.goto(f"{site.url}/forms/{form_id}/publish")
    expect(page.get_by_text("Publishing makes version 2")).to_be_visible()
    expect(page.get_by_text("“New email question” added")).to_be_visible()
    shoot_at_both_widths(windows, page, "64-builder-publish")
    page.get_by_role("button", name="Publish the form").click()
    expect(page.get_by_role("status")).to_contain_text("Version 2 of “Net Promoter Score”")

    # A respondent answers version 2 on the hosted page.
    page.goto(f"{site.url}/f/{form_id}")
    page.locator("input[name=nps][value='9']").check()
    page.get_by_label("New email question").fill("ada@example.com")
    page.get_by_role("button", name="Next").click()  # to the page break's (empty) page
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()  # NPS's promoters

    # Version 3: a title changed in the block's editor.
    page.goto(f"{builder}/blocks/0")
    page.get_by_label("Title").fill("Would you recommend us?")
    page.get_by_role("button", name="Save block").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    page.get_by_role("link", name="Review and publish").click()
    expect(page.get_by_text("title changed")).to_be_visible()
    page.get_by_role("button", name="Publish version 3").click()
    expect(page.get_by_role("status")).to_contain_text("Version 3")
    page.goto(f"{site.url}/forms/{form_id}/versions")
    expect(page.get_by_role("link", name="Version 1")).to_be_visible()
    shoot_at_both_widths(windows, page, "65-builder-versions")

    # Translations side by side: French added, what is missing marked.
    page.get_by_role("link", name="Translations").click()
    page.get_by_label("Add a language").fill("fr")
    page.get_by_role("button", name="Add language").click()
    expect(page.get_by_role("heading", name="en → fr")).to_be_visible()
    page.get_by_label("Title in fr", exact=True).fill("Recommandation")
    page.get_by_role("button", name="Save fr").click()
    expect(page.get_by_role("status")).to_contain_text("Translation saved.")
    expect(page.get_by_label("Title in fr", exact=True)).to_have_value("Recommandation")
    expect(page.locator("tr.missing").first).to_contain_text("missing")
    shoot_at_both_widths(windows, page, "66-builder-translations")

    current = api(site, "GET", f"/v1/forms/{form_id}", secret).json()
    second_version = api(site, "GET", f"/v1/forms/{form_id}?version=2", secret).json()
    first_version = api(site, "GET", f"/v1/forms/{form_id}?version=1", secret).json()
    assert current["version"] == 3
    assert current["blocks"][0]["title"] == "Would you recommend us?"
    assert second_version["blocks"][0]["title"].startswith("How likely")
    assert len(second_version["blocks"]) == 3 + len(TYPE_NAMES)
    assert len(first_version["blocks"]) == 3
    submissions = api(site, "GET", f"/v1/forms/{form_id}/submissions", secret).json()
    [answered] = submissions["data"]
    assert answered["formVersion"] == 2
    assert answered["answers"]["email"] == "ada@example.com"

    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    checker.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
    pages = ("edit", "edit/blocks/1", "edit/json", "edit/translations", "publish", "versions")
    for path in (*pages, "preview"):
        checker.goto(f"{site.url}/forms/{form_id}/{path}")
        assert axe_violations(checker) == [], path
