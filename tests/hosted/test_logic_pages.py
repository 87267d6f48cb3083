"""The hosted page with logic, driven as a browser without JavaScript would:
real pages with back and next, jumps, recall, hidden fields from the link,
prefill, and the ending the logic chooses."""

import html
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import PLAN, publish_over_api


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


FORM: dict[str, Any] = {
    "title": "Sign up",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True,
         "prefill": True},
        PLAN,
        {"type": "page_break", "key": "company"},
        {"type": "short_text", "key": "company_name", "title": "Company of {{name}}",
         "required": True},
        {"type": "page_break", "key": "contact"},
        {"type": "email", "key": "email", "title": "Where can we reach you, {{name|friend}}?",
         "required": True},
        {"type": "rating", "key": "nps", "title": "Recommend us?", "scale": 10},
    ],
    "hiddenFields": [{"key": "campaign"}],
    "variables": [{"name": "size", "type": "text", "value": {"cat": ["plan-", {"var": "plan"}]}}],
    "logic": [
        {"if": {"==": [{"var": "plan"}, "personal"]},
         "then": [{"jump": "contact", "after": "plan"}]},
        {"if": {"<=": [{"var": "nps"}, 6]}, "then": [{"jump": "sorry"}]},
    ],
    "endings": [
        {"key": "sorry", "title": "Sorry, {{name}}", "text": "We hear you ({{vars.size}})."},
        {"key": "thanks", "redirect": "https://example.com/done?c={{campaign}}&n={{name}}"},
    ],
}  # fmt: skip


async def _published(api: Api, session: AsyncSession, form: dict[str, Any]) -> tuple[str, str]:
    form_id, secret, _ = await publish_over_api(api, session, form)
    return form_id, secret


def _hidden(page: str) -> list[tuple[str, str]]:
    """The hidden inputs a browser would post back."""
    return [
        (html.unescape(name), html.unescape(value))
        for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)
    ]


def _post(page: str, fields: dict[str, str], go: str = "next") -> dict[str, list[str]]:
    """What the browser posts from `page`: its hidden inputs, these fields, the button."""
    posted: dict[str, list[str]] = {}
    for name, value in [*_hidden(page), *fields.items(), ("_go", go)]:
        posted.setdefault(name, []).append(value)
    return posted


async def test_a_respondent_goes_page_by_page_along_the_path_the_logic_takes(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _published(api, session, FORM)
    url = f"/f/{form_id}"

    first = await api.get(f"{url}?campaign=spring+24&name=Ada&plan=business")
    assert first.status_code == 200
    assert "Page 1 of 3" in first.text
    assert 'value="Ada"' in first.text  # prefilled: the form allows it for name
    assert 'name="plan" value="business" checked' not in first.text  # plan does not allow it
    assert ("campaign", "spring 24") in _hidden(first.text)
    assert "Back</button>" not in first.text

    # Personal jumps over the company page, straight to the contact page.
    contact = await api.post(url, data=_post(first.text, {"name": "Ada", "plan": "personal"}))
    assert contact.status_code == 200
    assert "Where can we reach you, Ada?" in contact.text
    assert "Company of" not in contact.text
    assert "Page 2 of 2" in contact.text

    # Back returns along the path taken: to the first page, answers kept.
    back = await api.post(url, data=_post(contact.text, {}, go="back"))
    assert "Page 1 of 2" in back.text  # personal: two pages ahead
    assert 'name="plan" value="personal" checked' in back.text

    # Business now: the company page comes next, and recalls the name.
    company = await api.post(url, data=_post(back.text, {"name": "Ada", "plan": "business"}))
    assert "Company of Ada" in company.text
    missing = await api.post(url, data=_post(company.text, {}))
    assert missing.status_code == 422
    assert "is required" in missing.text
    assert "Where can we reach you" not in missing.text  # only this page's errors

    contact = await api.post(url, data=_post(company.text, {"company_name": "Acme"}))
    done = await api.post(url, data=_post(contact.text, {"email": "ada@example.com", "nps": "9"}))

    assert done.status_code == 303
    target = urlsplit(done.headers["location"])
    assert (target.scheme, target.netloc, target.path) == ("https", "example.com", "/done")
    assert parse_qs(target.query) == {"c": ["spring 24"], "n": ["Ada"]}
    [stored] = (await api.get(f"{url.replace('/f/', '/v1/forms/')}/submissions", secret)).json()[
        "data"
    ]
    assert stored["answers"] == {
        "name": "Ada",
        "plan": "business",
        "company_name": "Acme",
        "email": "ada@example.com",
        "nps": 9,
        "campaign": "spring 24",
        "vars.size": "plan-business",
    }


async def test_an_answer_left_on_a_page_no_longer_taken_is_dropped_not_refused(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _published(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    company = await api.post(url, data=_post(first.text, {"name": "Ada", "plan": "business"}))
    contact = await api.post(url, data=_post(company.text, {"company_name": "Acme"}))
    back = await api.post(url, data=_post(contact.text, {}, go="back"))
    again = await api.post(url, data=_post(back.text, {}, go="back"))

    # Personal now: the company page is skipped, and its answer goes with it.
    contact = await api.post(url, data=_post(again.text, {"name": "Ada", "plan": "personal"}))
    done = await api.post(url, data=_post(contact.text, {"email": "a@example.com", "nps": "9"}))

    assert done.status_code == 303, done.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert "company_name" not in stored["answers"]


async def test_a_text_ending_recalls_answers_escaped(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _published(api, session, FORM)
    url = f"/f/{form_id}"
    first = await api.get(url)
    name = "<script>alert(1)</script>"
    contact = await api.post(url, data=_post(first.text, {"name": name, "plan": "personal"}))

    done = await api.post(url, data=_post(contact.text, {"email": "a@example.com", "nps": "3"}))

    assert done.status_code == 200
    assert "<script>alert(1)</script>" not in done.text
    assert "Sorry, &lt;script&gt;alert(1)&lt;/script&gt;" in done.text
    assert "We hear you (plan-personal)." in done.text
    assert "<script>" not in contact.text  # recalled in a question title: escaped too


async def test_a_post_of_every_answer_at_once_still_submits(
    api: Api, session: AsyncSession
) -> None:
    form_id, _ = await _published(api, session, FORM)

    done = await api.post(
        f"/f/{form_id}",
        data={"name": "Ada", "plan": "personal", "email": "a@example.com", "nps": "2"},
    )

    assert done.status_code == 200  # the "sorry" ending, recalling the name
    assert "Sorry, Ada" in done.text


async def test_a_shuffled_page_walks_its_answers_in_option_order_as_validation_does(
    api: Api, session: AsyncSession
) -> None:
    form = {
        "title": "Order",
        "blocks": [
            {"type": "multiple_choice", "key": "colors", "title": "Colors", "shuffle": "all",
             "options": [{"value": v, "label": v} for v in ("red", "green", "blue")]},
            {"type": "short_text", "key": "first_red", "title": "Why red first?", "required": True,
             "visibleIf": {"==": [{"var": "colors.0"}, "red"]}},
        ],
    }  # fmt: skip
    form_id, secret = await _published(api, session, form)

    # Checked on a page shuffled to blue, red: red comes first in option order.
    done = await api.post(
        f"/f/{form_id}",
        data={"_page": "0", "_go": "next", "colors": ["blue", "red"], "first_red": "Bright"},
    )

    assert done.status_code == 303, done.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"colors": "red,blue", "first_red": "Bright"}


async def test_a_thanks_link_shows_no_ending_without_its_pass(
    api: Api, session: AsyncSession
) -> None:
    """An ending is the respondent's who reached it (tests/hosted/test_endings.py):
    asked by its key alone, the page thanks in general, escaping what it was given."""
    form_id, _ = await _published(api, session, FORM)
    url = f"/f/{form_id}/thanks"

    sorry = await api.get(url, params={"ending": "sorry"})
    redirect = await api.get(url, params={"ending": "thanks"})  # a redirect: not a page
    unknown = await api.get(url, params={"ending": "<script>" * 1000, "token": "<script>"})

    for response in (sorry, redirect, unknown):
        assert response.status_code == 200
        assert "Your answers to “Sign up” were received." in response.text
        assert "Sorry" not in response.text
        assert "<script>" not in response.text
