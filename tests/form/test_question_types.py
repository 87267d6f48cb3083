"""The question types beyond the first ten, over the API and the hosted page:
their answers, their errors, their schema, and rules reading them."""

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import publish_over_api


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


OPTIONS = [{"value": v, "label": v.title()} for v in ("price", "speed", "support")]
FORM: dict[str, Any] = {
    "title": "Every type",
    "blocks": [
        {"type": "yes_no", "key": "member", "title": "Are you a member?", "required": True},
        {"type": "nps", "key": "nps", "title": "Recommend us?", "minLabel": "Never"},
        {"type": "scale", "key": "ease", "title": "How easy?", "min": 0, "max": 4},
        {"type": "dropdown", "key": "country", "title": "Country",
         "options": [{"value": f"c{i}", "label": f"Country {i}"} for i in range(300)]},
        {"type": "ranking", "key": "priorities", "title": "Rank these", "options": OPTIONS,
         "shuffle": "all"},
        {"type": "time", "key": "at", "title": "Best time to call"},
        {"type": "date_time", "key": "when", "title": "Appointment"},
        {"type": "date", "key": "start", "title": "Start", "min": "2026-01-01",
         "max": "2026-12-31"},
        {"type": "short_text", "key": "code", "title": "Postcode", "pattern": "^[0-9]{5}$",
         "patternMessage": "five digits, such as 75001"},
        {"type": "number", "key": "amount", "title": "Amount", "step": 0.25},
        {"type": "short_text", "key": "why", "title": "Why is support first?",
         "visibleIf": {"==": [{"var": "priorities.0"}, "support"]}},
    ],
    "variables": [{"name": "promoter", "value": {">=": [{"var": "nps"}, 9]}}],
}  # fmt: skip
GOOD = {
    "member": "yes",
    "nps": 10,
    "ease": 0,
    "country": "c299",
    "priorities": "support,price,speed",
    "at": "09:30",
    "when": "2026-12-01T14:00",
    "start": "2026-06-15",
    "code": "75001",
    "amount": 2.75,
    "why": "It matters",
}


async def test_every_type_takes_its_answer_and_rules_read_it(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    created = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": GOOD})

    assert created.status_code == 201, created.text
    assert created.json()["answers"] == {**GOOD, "vars.promoter": 1}
    schema = (await api.get(f"/v1/forms/{form_id}", secret)).json()["schema"]
    Draft202012Validator.check_schema(schema)
    assert Draft202012Validator(schema).is_valid({**GOOD})


@pytest.mark.parametrize(
    ("key", "value", "detail"),
    [
        ("member", "maybe", "must be yes or no"),
        ("nps", 11, "from 0 to 10"),
        ("ease", 5, "from 0 to 4"),
        ("country", "c300", "must be one of"),
        ("priorities", "price,speed", "every option value once"),
        ("priorities", "price,price,speed", "every option value once"),
        ("at", "24:00", "HH:MM"),
        ("when", "2026-02-30T10:00", "YYYY-MM-DDTHH:MM"),
        ("start", "2027-01-01", "on or before 2026-12-31"),
        ("code", "7500", "five digits, such as 75001"),
        ("amount", 2.8, "multiple of 0.25"),
    ],
)
async def test_a_wrong_answer_of_each_type_is_named(
    api: Api, session: AsyncSession, key: str, value: Any, detail: str
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)

    refused = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {**GOOD, key: value}}
    )

    assert refused.status_code == 422
    [error] = refused.json()["errors"]
    assert error["pointer"] == f"/answers/{key}"
    assert detail in error["detail"]


async def test_a_ranking_not_led_by_support_hides_the_question_about_it(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    answers = {**GOOD, "priorities": "price,support,speed"}

    refused = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})
    answers.pop("why")
    taken = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})

    assert refused.status_code == 422
    assert refused.json()["errors"][0]["pointer"] == "/answers/why"
    assert taken.status_code == 201, taken.text


@pytest.mark.parametrize(
    ("block", "detail"),
    [
        ({"type": "short_text", "key": "x", "title": "X", "pattern": "(a+)+$"}, "exponential"),
        ({"type": "short_text", "key": "x", "title": "X", "pattern": "(?<=a)b"}, "(?...)"),
        ({"type": "date", "key": "x", "title": "X", "min": "2026-02-30"}, "day is out of range"),
        ({"type": "scale", "key": "x", "title": "X", "max": 11}, "less than or equal to 10"),
        ({"type": "dropdown", "key": "x", "title": "X",
          "options": [{"value": f"v{i}", "label": "L"} for i in range(1001)]}, "at most 1000"),
        ({"type": "single_choice", "key": "x", "title": "X",
          "options": [{"value": f"v{i}", "label": "L"} for i in range(201)]}, "at most 200"),
    ],
)  # fmt: skip
async def test_a_block_that_cannot_work_is_refused_on_save(
    api: Api, session: AsyncSession, block: dict[str, Any], detail: str
) -> None:
    _, secret, _ = await publish_over_api(api, session, {"title": "Fine", "blocks": []})

    refused = await api.post("/v1/forms", secret, json={"title": "Bad", "blocks": [block]})

    assert refused.status_code == 422
    assert any(detail in e["detail"] for e in refused.json()["errors"]), refused.json()


async def test_the_hosted_page_asks_each_type_and_stores_the_answers(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    page = await api.get(f"/f/{form_id}")
    assert page.status_code == 200
    assert 'type="time"' in page.text
    assert 'type="datetime-local"' in page.text
    assert page.text.count('<option value="c') == 300
    assert "0: Never" in page.text

    fields = {**{k: str(v) for k, v in GOOD.items()}, "priorities": ["support", "price", "speed"]}
    posted = await api.post(f"/f/{form_id}", data=fields)

    assert posted.status_code == 303, posted.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"]["priorities"] == "support,price,speed"
    assert stored["answers"]["nps"] == 10


AGREE = [{"value": v, "label": v.title()} for v in ("disagree", "neutral", "agree")]
MATRIX_FORM: dict[str, Any] = {
    "title": "Matrix",
    "blocks": [
        {"type": "matrix", "key": "service", "title": "Our service", "required": True,
         "rows": [{"value": "speed", "label": "Fast"}, {"value": "price", "label": "Fair price"}],
         "columns": AGREE},
        {"type": "long_text", "key": "why_slow", "title": "What was slow?",
         "visibleIf": {"==": [{"var": "service.speed"}, "disagree"]}},
    ],
}  # fmt: skip


async def test_a_matrix_answers_a_key_per_row_and_rules_read_each_row(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, MATRIX_FORM)
    path = f"/v1/forms/{form_id}/submissions"

    taken = await api.post(
        path,
        secret,
        json={"answers": {"service.speed": "disagree", "service.price": "agree", "why_slow": "x"}},
    )
    missing_row = await api.post(path, secret, json={"answers": {"service.speed": "agree"}})
    hidden = await api.post(
        path,
        secret,
        json={"answers": {"service.speed": "agree", "service.price": "agree", "why_slow": "x"}},
    )
    wrong = await api.post(
        path, secret, json={"answers": {"service.speed": "maybe", "service.price": "agree"}}
    )

    assert taken.status_code == 201, taken.text
    assert missing_row.json()["errors"] == [
        {"pointer": "/answers/service.price", "detail": "is required"}
    ]
    assert hidden.json()["errors"][0]["pointer"] == "/answers/why_slow"
    assert wrong.json()["errors"][0]["pointer"] == "/answers/service.speed"
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert form["schema"]["properties"]["service.price"]["enum"] == [
        "disagree",
        "neutral",
        "agree",
    ]
    csv = (await api.get(f"{path}/export", secret, params={"format": "csv"})).text
    assert csv.lstrip("\ufeff").splitlines()[0].endswith(",service.speed,service.price,why_slow")

    page = await api.get(f"/f/{form_id}")
    assert 'aria-label="Fast: Agree"' in page.text
    posted = await api.post(
        f"/f/{form_id}", data={"service.speed": "neutral", "service.price": "neutral"}
    )
    assert posted.status_code == 303, posted.text


OTHER_FORM: dict[str, Any] = {
    "title": "Other",
    "blocks": [
        {"type": "single_choice", "key": "source", "title": "Where did you hear of us?",
         "options": [{"value": "friend", "label": "A friend"}], "allowOther": True},
        {"type": "multiple_choice", "key": "tools", "title": "Tools", "options": OPTIONS,
         "allowOther": True},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("answers", "errors"),
    [
        ({"source": "other", "source_other": "A podcast"}, []),
        ({"tools": "price,other", "tools_other": "Vim"}, []),
        ({"source": "friend"}, []),
        ({"source": "other"}, [("/answers/source_other", "is required when Other is chosen")]),
        ({"source": "friend", "source_other": "x"}, [("/answers/source_other", "is only for")]),
        ({"source_other": "x"}, [("/answers/source_other", "is only for")]),
        ({"source": "other", "source_other": " "}, [("/answers/source_other", "1 to 200")]),
        ({"source": "podcast"}, [("/answers/source", "must be one of: friend, other")]),
    ],
)
async def test_other_comes_with_its_text_and_only_then(
    api: Api, session: AsyncSession, answers: dict[str, Any], errors: list[tuple[str, str]]
) -> None:
    form_id, secret, _ = await publish_over_api(api, session, OTHER_FORM)

    response = await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": answers})

    if not errors:
        assert response.status_code == 201, response.text
        assert response.json()["answers"] == answers
    else:
        found = [(e["pointer"], e["detail"]) for e in response.json()["errors"]]
        assert len(found) == len(errors), found
        for (pointer, detail), (want_pointer, want) in zip(found, errors, strict=True):
            assert pointer == want_pointer
            assert want in detail


async def test_other_on_the_hosted_page(api: Api, session: AsyncSession) -> None:
    form_id, secret, _ = await publish_over_api(api, session, OTHER_FORM)

    page = await api.get(f"/f/{form_id}")
    posted = await api.post(
        f"/f/{form_id}", data={"source": "other", "source_other": " A podcast "}
    )
    taken = {"type": "short_text", "key": "source_other", "title": "X"}
    clash = await api.post(
        "/v1/forms", secret, json={**OTHER_FORM, "blocks": [*OTHER_FORM["blocks"], taken]}
    )

    assert 'name="source_other"' in page.text
    assert posted.status_code == 303, posted.text
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"source": "other", "source_other": "A podcast"}
    assert clash.status_code == 422
    assert any("keys must be unique" in e["detail"] for e in clash.json()["errors"])
