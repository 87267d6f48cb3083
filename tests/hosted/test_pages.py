"""The hosted form page, driven as a browser without JavaScript would: GET the
page, POST the form fields, follow the redirect."""

import re
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org
from tests.support.honeypot import honeypot_in

BLOCKS: list[dict[str, Any]] = [
    {"type": "heading", "text": "About you"},
    {"type": "short_text", "key": "name", "title": "Your name", "required": True},
    {"type": "email", "key": "email", "title": "Email", "description": "We reply here."},
    {"type": "number", "key": "age", "title": "Age", "min": 0, "max": 130, "integer": True},
    {"type": "rating", "key": "score", "title": "Score", "scale": 5, "required": True},
    {
        "type": "multiple_choice",
        "key": "liked",
        "title": "Liked",
        "options": [{"value": "speed", "label": "Speed"}, {"value": "price", "label": "Price"}],
    },
    {"type": "long_text", "key": "notes", "title": "Notes"},
]


async def _published(session: AsyncSession, status: str = "published") -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, title="Feedback", status=status, blocks=BLOCKS)
    await session.commit()
    return form.id, secret


async def test_the_page_renders_every_question_accessibly(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _published(session)

    page = await api.get(f"/f/{form_id}")

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "<h1>Feedback</h1>" in html
    assert '<label for="field-name">Your name' in html
    assert 'id="field-email" name="email"' in html
    assert 'aria-describedby="email-hint"' in html
    assert "<legend>Score" in html
    assert html.count('name="score"') == 5
    assert html.count('type="checkbox" name="liked"') == 2
    assert '<form method="post" action="/f/' in html
    # Only our own script files and one data block run nothing inline; these
    # tests post as a browser without script does, so the page works without.
    scripts = re.findall(r"<script([^>]*)>", html)
    assert scripts == [
        ' src="/f/static/logic.js" defer',
        ' src="/f/static/page.js" defer',
        ' type="application/json" id="form-logic"',
    ]


async def test_answers_posted_from_the_page_are_stored(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _published(session)

    posted = await api.post(
        f"/f/{form_id}",
        data={
            "name": "Ada",
            "email": "ada@example.com",
            "age": "36",
            "score": "4",
            "liked": ["price", "speed"],
            "notes": "",
        },
    )
    thanks = await api.get(posted.headers["location"])

    assert posted.status_code == 303
    assert posted.headers["location"] == f"/f/{form_id}/thanks"
    assert thanks.status_code == 200
    assert "Thank you" in thanks.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {
        "name": "Ada",
        "email": "ada@example.com",
        "age": 36,
        "score": 4,
        "liked": "speed,price",
    }


async def test_errors_show_next_to_their_fields_and_values_stay(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _published(session)

    page = await api.post(
        f"/f/{form_id}",
        data={"name": "", "email": "not-an-email", "age": "old", "score": "4", "notes": "keep me"},
    )

    assert page.status_code == 422
    html = page.text
    assert 'role="alert"' in html
    assert "Please correct 3 answers" in html
    assert re.search(r'id="field-email"[^>]*aria-invalid="true"', html)
    assert '<p class="error" id="email-error">must be an email address' in html
    assert '<p class="error" id="name-error">is required</p>' in html
    assert '<p class="error" id="age-error">must be a number</p>' in html
    assert 'value="not-an-email"' in html  # what was typed is kept
    assert ">keep me</textarea>" in html
    assert re.search(r'name="score" value="4" checked', html)
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert form["responseCount"] == 0  # nothing stored, the count given back


async def test_the_honeypot_takes_nothing(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _published(session)

    honeypot = honeypot_in((await api.get(f"/f/{form_id}")).text)
    posted = await api.post(
        f"/f/{form_id}", data={"name": "Bot", "score": "5", honeypot: "http://spam.example"}
    )

    assert posted.status_code == 303  # looks like success to the bot
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


@pytest.mark.parametrize(("status", "code"), [("closed", 410), ("draft", 404), ("archived", 404)])
async def test_forms_not_taking_answers_say_so(
    api: Api, session: AsyncSession, status: str, code: int
) -> None:
    form_id, secret = await _published(session, status)

    page = await api.get(f"/f/{form_id}")
    posted = await api.post(f"/f/{form_id}", data={"name": "Ada", "score": "3"})

    assert page.status_code == posted.status_code == code
    assert ("closed" in page.text) == (status == "closed")
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_unknown_forms_are_a_clear_404(api: Api) -> None:
    for path in ("/f/frm_nope", "/f/%00", "/f/frm_nope/thanks"):
        page = await api.get(path)
        assert page.status_code == 404
        assert "There is no form at this address" in page.text


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=3)


@pytest.mark.usefixtures("whole_minute")
async def test_the_page_is_limited_per_ip(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _published(session)

    statuses = [(await api.get(f"/f/{form_id}")).status_code for _ in range(3)]
    limited = await api.post(f"/f/{form_id}", data={"name": "Ada", "score": "3"})

    assert statuses == [200, 200, 200]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert "Too many requests" in limited.text


@pytest.mark.parametrize("age", ["nan", "inf", "1e30"])
async def test_numbers_json_cannot_carry_are_refused_on_the_page(
    api: Api, session: AsyncSession, age: str
) -> None:
    form_id, secret = await _published(session)

    page = await api.post(f"/f/{form_id}", data={"name": "Ada", "score": "3", "age": age})

    assert page.status_code == 422
    assert 'id="age-error"' in page.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_a_scales_ends_show_only_the_labels_it_has(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    blocks: list[dict[str, Any]] = [
        {"type": "scale", "key": "bare", "title": "Bare", "min": 1, "max": 5},
        {"type": "scale", "key": "low", "title": "Low", "min": 0, "max": 3, "minLabel": "Never"},
        {"type": "nps", "key": "nps", "title": "NPS"},
    ]
    form = await create_form(session, org, title="Scales", blocks=blocks)
    await session.commit()

    page = (await api.get(f"/f/{form.id}")).text

    ends = re.findall(r'<p class="ends">(.*?)</p>', page)
    assert ends == [
        "<span>0: Never</span><span></span>",
        "<span>0: Not at all likely</span><span>10: Extremely likely</span>",
    ]
    assert "1: <" not in page  # no number followed by an empty label
