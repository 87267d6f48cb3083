"""The form language over the API: conditions, hidden fields, variables,
jumps and endings decided by the server, and rules checked on save."""

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Submission
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import PLAN, publish_over_api


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, rate_limit_standard=100_000)


def _var(name: str) -> dict[str, Any]:
    return {"var": name}


ADD_ONE = {"set": "score", "to": {"+": [_var("vars.score"), 1]}}
SIGNUP: dict[str, Any] = {
    "title": "Sign up",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Name", "required": True},
        PLAN,
        {
            "type": "number",
            "key": "company_size",
            "title": "How many people work at your company, {{name}}?",
            "required": True,
            "visibleIf": {"==": [_var("plan"), "business"]},
        },
        {"type": "page_break", "key": "feedback"},
        {"type": "rating", "key": "nps", "title": "Recommend us?", "scale": 10},
        {"type": "single_choice", "key": "q1", "title": "2 + 2?", "options": [
            {"value": "four", "label": "4"}, {"value": "five", "label": "5"}]},
        {"type": "single_choice", "key": "q2", "title": "Capital of France?", "options": [
            {"value": "paris", "label": "Paris"}, {"value": "lyon", "label": "Lyon"}]},
    ],
    "hiddenFields": [{"key": "campaign"}],
    "variables": [
        {"name": "score", "type": "number"},
        {"name": "seats_price", "value": {"*": [{"var": "company_size"}, 12]}},
    ],
    "logic": [
        {"if": {"==": [_var("q1"), "four"]}, "then": [ADD_ONE]},
        {"if": {"==": [_var("q2"), "paris"]}, "then": [ADD_ONE]},
        {"if": {"<=": [_var("nps"), 6]}, "then": [{"jump": "sorry"}]},
    ],
    "endings": [
        {"key": "sorry", "title": "Sorry", "text": "We will do better, {{name|friend}}."},
        {"key": "thanks", "redirect": "https://example.com/thanks?c={{campaign}}"},
    ],
}  # fmt: skip


async def _published(api: Api, session: AsyncSession, form: dict[str, Any]) -> tuple[str, str]:
    form_id, secret, _ = await publish_over_api(api, session, form)
    return form_id, secret


async def _ending(session: AsyncSession, org_id: str, submission_id: str) -> str | None:
    """The ending stored with a submission."""
    statement = select(Submission.ending).where(
        scoped(Submission, org_id), Submission.id == submission_id
    )
    return (await session.scalars(statement)).one()


async def test_the_definition_reads_back_as_it_was_sent(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _published(api, session, SIGNUP)

    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()

    assert form["blocks"][2]["visibleIf"] == {"==": [{"var": "plan"}, "business"]}
    assert form["hiddenFields"] == SIGNUP["hiddenFields"]
    assert form["logic"] == SIGNUP["logic"]
    assert [e["key"] for e in form["endings"]] == ["sorry", "thanks"]
    assert form["variables"][0] == {"name": "score", "type": "number", "initial": 0}


@pytest.mark.parametrize(
    "where",
    [
        lambda rule: {"blocks": [PLAN, {**PLAN, "key": "again", "visibleIf": rule}]},
        lambda rule: {"variables": [{"name": "v", "type": "text", "value": rule}]},
        lambda rule: {"logic": [{"if": rule, "then": []}]},
    ],
    ids=["visibleIf", "a variable's value", "a rule's if"],
)
async def test_a_nul_in_a_rules_text_is_refused_on_every_engine(
    api: Api, session: AsyncSession, where: Any
) -> None:
    """PostgreSQL's JSONB cannot store U+0000: it answered 500 there."""
    form_id, secret = await _published(api, session, SIGNUP)
    rule = {"==": [{"var": "plan"}, "nul\x00here"]}

    changed = await api.patch(f"/v1/forms/{form_id}", secret, json=where(rule))

    assert changed.status_code == 422, changed.text
    assert "NUL" in changed.text
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 1


async def test_a_question_the_logic_hides_is_not_required_and_cannot_be_answered(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _published(api, session, SIGNUP)
    path = f"/v1/forms/{form_id}/submissions"

    personal = await api.post(path, secret, json={"answers": {"name": "Ada", "plan": "personal"}})
    business = await api.post(path, secret, json={"answers": {"name": "Bo", "plan": "business"}})
    crafted = await api.post(
        path, secret, json={"answers": {"name": "Cy", "plan": "personal", "company_size": 5}}
    )

    assert personal.status_code == 201, personal.text
    assert business.status_code == 422
    assert business.json()["errors"] == [
        {"pointer": "/answers/company_size", "detail": "is required"}
    ]
    assert crafted.status_code == 422
    assert crafted.json()["errors"][0]["pointer"] == "/answers/company_size"
    assert "hidden by the form's logic" in crafted.json()["errors"][0]["detail"]


async def test_hidden_fields_variables_and_the_ending_are_stored_with_the_answers(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, SIGNUP)
    path = f"/v1/forms/{form_id}/submissions"
    answers = {"name": "Ada", "plan": "business", "company_size": 3, "nps": 9,
               "q1": "four", "q2": "lyon", "campaign": "spring-24"}  # fmt: skip

    promoter = await api.post(path, secret, json={"answers": answers})
    detractor = await api.post(path, secret, json={"answers": {**answers, "nps": 4}})

    assert promoter.status_code == 201, promoter.text
    stored = promoter.json()["answers"]
    assert stored["campaign"] == "spring-24"
    assert stored["vars.score"] == 1
    assert stored["vars.seats_price"] == 36
    assert (
        await _ending(session, org_id, promoter.json()["id"]) == "thanks"
    )  # the last: the default
    assert await _ending(session, org_id, detractor.json()["id"]) == "sorry"
    read = (await api.get(f"{path}/{promoter.json()['id']}", secret)).json()
    assert read["answers"] == stored
    assert read["ending"] == "thanks"
    csv = (await api.get(f"{path}/export", secret, params={"format": "csv"})).text
    header, first, _ = csv.lstrip("\ufeff").splitlines()
    assert header.endswith(",nps,q1,q2,campaign,vars.score,vars.seats_price")
    assert first.endswith(",9,four,lyon,spring-24,1,36")


async def test_variables_are_the_servers_and_never_taken_from_the_client(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _published(api, session, SIGNUP)
    path = f"/v1/forms/{form_id}/submissions"

    sent = await api.post(
        path, secret, json={"answers": {"name": "Ada", "plan": "personal", "vars.score": 99}}
    )
    created = await api.post(
        path, secret, json={"answers": {"name": "Ada", "plan": "personal", "q1": "four"}}
    )
    edited = await api.patch(
        f"{path}/{created.json()['id']}", secret, json={"answers": {"q1": "five"}}
    )

    assert sent.status_code == 422
    assert sent.json()["errors"] == [
        {"pointer": "/answers/vars.score", "detail": "is computed by the server; leave it out"}
    ]
    assert created.json()["answers"]["vars.score"] == 1
    assert edited.status_code == 200, edited.text
    assert edited.json()["answers"]["vars.score"] == 0  # recomputed from the correction


async def test_a_jump_skips_the_pages_between_and_their_answers_are_refused(
    api: Api, session: AsyncSession
) -> None:
    form = {
        "title": "Jumps",
        "blocks": [
            PLAN,
            {"type": "page_break", "key": "company"},
            {"type": "short_text", "key": "company_name", "title": "Company", "required": True},
            {"type": "page_break", "key": "contact"},
            {"type": "email", "key": "email", "title": "Email", "required": True},
        ],
        "logic": [
            {"if": {"==": [_var("plan"), "personal"]},
             "then": [{"jump": "contact", "after": "plan"}]}
        ],
    }  # fmt: skip
    form_id, secret = await _published(api, session, form)
    path = f"/v1/forms/{form_id}/submissions"

    skipped = await api.post(
        path, secret, json={"answers": {"plan": "personal", "email": "a@example.com"}}
    )
    through = await api.post(
        path, secret, json={"answers": {"plan": "business", "email": "a@example.com"}}
    )
    crafted = await api.post(
        path,
        secret,
        json={"answers": {"plan": "personal", "company_name": "X", "email": "a@example.com"}},
    )

    assert skipped.status_code == 201, skipped.text
    assert through.status_code == 422
    assert through.json()["errors"] == [
        {"pointer": "/answers/company_name", "detail": "is required"}
    ]
    assert crafted.status_code == 422
    assert crafted.json()["errors"][0]["pointer"] == "/answers/company_name"


def _deep(depth: int) -> dict[str, Any]:
    rule: dict[str, Any] = {"var": "name"}
    for _ in range(depth):
        rule = {"!": rule}
    return rule


@pytest.mark.parametrize(
    ("change", "pointer", "detail"),
    [
        (
            {"logic": [{"if": {"regex_of_doom": [1]}, "then": [{"set": "score", "to": 1}]}]},
            "/logic/0/if/regex_of_doom",
            "unknown operator",
        ),
        (
            {"logic": [{"if": {"==": [_var("nobody"), 1]}, "then": [{"set": "score", "to": 1}]}]},
            "/logic/0/if/==/0/var",
            "which this form does not have",
        ),
        (
            {"blocks": [{**SIGNUP["blocks"][0], "visibleIf": {"==": [_var("plan"), "x"]}}, PLAN]},
            "/blocks/0/visibleIf/==/0/var",
            "comes after block 0",
        ),
        (
            {"logic": [{"if": {">": [_var("nps"), "great"]}, "then": [{"set": "score", "to": 1}]}]},
            "/logic/0/if/>",
            "a number and text",
        ),
        (
            {
                "logic": [
                    {"if": {"in": ["gold", _var("plan")]}, "then": [{"set": "score", "to": 1}]}
                ]
            },
            "/logic/0/if/in",
            "not an option",
        ),
        (
            {"logic": [{"if": True, "then": [{"jump": "feedback", "after": "q1"}]}]},
            "/logic/0/then/0/jump",
            "jumps only go forward",
        ),
        (
            {"variables": [{"name": "loop", "value": {"+": [_var("vars.loop"), 1]}}]},
            "/variables/0/value",
            "refers to itself",
        ),
        (
            {"variables": [{"name": "deep", "value": _deep(22)}]},
            "/variables/0/value",
            "nests deeper than 20 levels",
        ),
        (
            {"variables": [{"name": "big", "value": {"+": list(range(10_000))}}]},
            "/variables/0/value",
            "more than 1,000 parts",
        ),
        (
            {"variables": [{"name": "re", "value": {"match": [_var("name"), "(a+)+$"]}}]},
            "/variables/0/value/match/1",
            "exponential time",
        ),
        (
            {"endings": [{"key": "bye", "redirect": "javascript:alert(1)"}]},
            "/endings/0/redirect",
            "http or https",
        ),
        (
            {"endings": [{"key": "plan", "text": "Bye"}]},
            "/endings/0/key",
            "keys must be unique",
        ),
        # From a hostile pass: each was a 500, a slow post or an open redirect.
        (
            {"logic": [{"if": {"in": [{"var": 5}, "abc"]}, "then": [ADD_ONE]}]},
            "/logic/0/if/in/0/var",
            "written out",
        ),
        (
            {"logic": [{"if": {"<": [{"var": [{"var": "nps"}]}, 1, "x"]}, "then": [ADD_ONE]}]},
            "/logic/0/if/</0/var/0",
            "written out",
        ),
        (
            {"variables": [{"name": "x", "value": {"var": "name.²"}}]},
            "/variables/0/value/var",
            "does not have",
        ),
        ({"hiddenFields": [{"key": "vars"}]}, "/hiddenFields/0/key", "'vars' is reserved"),
        (
            {"variables": [{"name": "constructor"}]},
            "/variables/0/name",
            "'constructor' is reserved",
        ),
        (
            {"variables": [{"name": "big", "value": {"+": [10**30, 1]}}]},
            "/variables/0/value/+/0",
            "at most 2^53",
        ),
        ({"variables": [{"name": "big", "initial": 10**30}]}, "/variables/0/initial", "less"),
        (
            {"endings": [{"key": "bye", "redirect": "https://{{name|example.com}}/x"}]},
            "/endings/0/redirect",
            "not in its scheme or host",
        ),
        (
            {"variables": [{"name": "slow", "value": {"match": [_var("name"), "\\w{1000}c"]}}]},
            "/variables/0/value/match/1",
            "counts a repetition past 100",
        ),
        (
            {
                "variables": [
                    {"name": f"m{i}", "value": {"match": [_var("name"), "a"]}} for i in range(21)
                ]
            },
            "/variables/20/value",
            "at most 20 times",
        ),
    ],
)
async def test_a_rule_that_cannot_work_is_refused_on_save_with_a_pointer_to_it(
    api: Api, session: AsyncSession, change: dict[str, Any], pointer: str, detail: str
) -> None:
    form_id, secret = await _published(api, session, SIGNUP)

    created = await api.post("/v1/forms", secret, json={**SIGNUP, "title": "New", **change})
    patched = await api.patch(f"/v1/forms/{form_id}", secret, json=change)

    for response in (created, patched):
        assert response.status_code == 422, response.text
        assert response.headers["content-type"] == "application/problem+json"
        errors = response.json()["errors"]
        assert any(e["pointer"].startswith(pointer) and detail in e["detail"] for e in errors), (
            errors
        )
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["version"] == 1


async def test_a_body_nested_past_the_limit_is_refused_before_any_rule_is_read(
    api: Api, session: AsyncSession
) -> None:
    _, secret = await _published(api, session, SIGNUP)

    deep = '{"!":' * 10_000 + '{"var":"name"}' + "}" * 10_000
    body = '{"title":"Deep","variables":[{"name":"d","value":' + deep + "}]}"
    response = await api.post(
        "/v1/forms", secret, content=body, headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["type"] == "/problems/malformed-json"


async def test_numbers_from_text_are_javascripts_doubles_never_a_500(
    api: Api, session: AsyncSession
) -> None:
    form = {
        "title": "Hex",
        "blocks": [{"type": "short_text", "key": "a", "title": "A"}],
        "hiddenFields": [{"key": "price"}],
        "variables": [
            {"name": "half", "value": {"/": [{"var": "price"}, 2]}},
            {"name": "n", "value": {"var": "a"}},
        ],
    }
    form_id, secret = await _published(api, session, form)
    path = f"/v1/forms/{form_id}/submissions"

    huge = await api.post(path, secret, json={"answers": {"price": "0x" + "f" * 300}})
    exact = await api.post(
        path, secret, json={"answers": {"price": "0x20000000000001", "a": "0x" + "f" * 20}}
    )
    page = await api.get(f"/f/{form_id}?price=0x{'f' * 300}")

    assert huge.status_code == 201, huge.text
    assert huge.json()["answers"]["vars.half"] == 0  # Infinity is no number to store
    assert exact.status_code == 201, exact.text
    assert exact.json()["answers"]["vars.half"] == 4503599627370496  # 2^53 / 2, as JavaScript
    assert exact.json()["answers"]["vars.n"] == float(0xFFFFFFFFFFFFFFFFFFFF)
    assert page.status_code == 200


async def test_a_tampered_page_number_is_ignored_not_a_500(api: Api, session: AsyncSession) -> None:
    form_id, _ = await _published(api, session, SIGNUP)

    for page in ("²", "9" * 5000, "-1"):
        response = await api.post(
            f"/f/{form_id}", data={"_page": page, "name": "Ada", "plan": "personal", "nps": "9"}
        )
        assert response.status_code in (200, 303, 422), (page, response.status_code)


async def test_a_required_choice_with_other_needs_no_other_text_unless_other_is_chosen(
    api: Api, session: AsyncSession
) -> None:
    form = {
        "title": "Other",
        "blocks": [{**PLAN, "required": True, "allowOther": True}],
        "hiddenFields": [{"key": "campaign"}],  # a form with logic: walked by the server
    }
    form_id, secret = await _published(api, session, form)

    chosen = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": "business"}}
    )

    assert chosen.status_code == 201, chosen.text
