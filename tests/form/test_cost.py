"""A form's cost (language/cost.py): counted on save and bounded, so that no
form can make a post or a page cost more than MAX_UNITS; and a costly form's
work done off the event loop, so that another organization's requests go on
while it runs (form/work.py, kit/fair.py)."""

import asyncio
from typing import Any

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.form import service as form_service
from formsapi.language.blocks import BlockList
from formsapi.language.compiled import Compiled
from formsapi.language.cost import MAX_UNITS, RECALL_SHOWN, cost_of
from formsapi.language.definition import Definition, Layout
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]


@pytest.fixture
def settings(database_url: str) -> Settings:
    # A and B post and read from one address: its limit is not what is tested.
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


def _rules(count: int) -> dict[str, Any]:
    """Ten numbers and `count` rules of about 800 parts, each setting a
    variable (the hostile pass's form had 200 of about 500)."""
    condition = {"and": [{">=": [{"var": f"q{i % 10}"}, -i]} for i in range(166)]}
    return {
        "title": "Rules",
        "blocks": [{"type": "number", "key": f"q{i}", "title": f"Q{i}"} for i in range(10)],
        "variables": [{"name": "s", "type": "number", "initial": 0}],
        "logic": [
            {"if": condition, "then": [{"set": "s", "to": {"+": [{"var": "vars.s"}, 1]}}]}
            for _ in range(count)
        ],
    }


def _dropdowns(count: int) -> dict[str, Any]:
    options = [{"value": f"o{j}", "label": f"Option {j}"} for j in range(1000)]
    return {
        "title": "Dropdowns",
        "blocks": [
            {"type": "dropdown", "key": f"d{i}", "title": f"D{i}", "options": options}
            for i in range(count)
        ],
    }


def _pages(pages: int, read_by_variables: str) -> dict[str, Any]:
    """A number on each page, a block on each page shown by a variable, and
    ten variables summing `read_by_variables` (`first`: the first page's
    number, as many times as there are pages; `every`: every page's) with
    100 more terms."""
    blocks: list[dict[str, Any]] = []
    for page in range(pages):
        if page:
            blocks.append({"type": "page_break", "key": f"p{page}"})
        blocks.append({"type": "number", "key": f"n{page}", "title": f"N{page}"})
        blocks.append(
            {"type": "paragraph", "text": "Hi", "visibleIf": {">": [{"var": "vars.v0"}, -1]}}
        )
    read = [0] * pages if read_by_variables == "first" else range(pages)
    total = {"+": [*({"var": f"n{page}"} for page in read), *[1] * 100]}
    variables = [{"name": f"v{j}", "type": "number", "value": total} for j in range(10)]
    return {"title": "Pages", "blocks": blocks, "variables": variables}


def _units(body: dict[str, Any]) -> int:
    definition = Definition.model_validate(
        {k: v for k, v in body.items() if k not in ("title", "blocks")}
    )
    return cost_of(Layout(BlockList.validate_python(body["blocks"]), definition)).units


async def _writer(session: AsyncSession) -> str:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    await session.commit()
    return secret


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        pytest.param(_rules(200), "/logic", id="200 rules of 800 parts"),
        pytest.param(_dropdowns(20), "/blocks", id="20 dropdowns of 1,000 options on a page"),
        pytest.param(_pages(60, "every"), "/logic", id="variables read on every page"),
    ],
)
async def test_a_form_costing_more_than_the_bound_is_refused_on_save(
    api: Api, session: AsyncSession, body: dict[str, Any], pointer: str
) -> None:
    secret = await _writer(session)
    assert _units(body) > MAX_UNITS

    created = await api.post("/v1/forms", secret, json=body)

    assert created.status_code == 422, created.text
    (error,) = created.json()["errors"]
    assert error["pointer"] == pointer
    assert f"more than the {MAX_UNITS:,} a form may" in error["detail"]
    # An update is refused alike, and leaves the form as it was.
    small = {"title": "Small", "blocks": body["blocks"][:1]}
    made = await api.post("/v1/forms", secret, json=small)
    assert made.status_code == 201, made.text
    form = made.json()["id"]
    changed = await api.patch(f"/v1/forms/{form}", secret, json=body)
    assert changed.status_code == 422
    assert (await api.get(f"/v1/forms/{form}", secret)).json()["version"] == 1


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_rules(100), id="100 rules of 800 parts"),
        pytest.param(_dropdowns(16), id="16 dropdowns of 1,000 options on a page"),
        # Variables are computed again only when an answer they read came in.
        pytest.param(_pages(60, "first"), id="variables reading the first page only"),
    ],
)
async def test_a_form_within_the_bound_is_taken_and_answered(
    api: Api, session: AsyncSession, body: dict[str, Any]
) -> None:
    secret = await _writer(session)
    assert _units(body) <= MAX_UNITS

    created = await api.post("/v1/forms", secret, json=body)
    assert created.status_code == 201, created.text
    form = created.json()["id"]
    published = await api.patch(f"/v1/forms/{form}", secret, json={"status": "published"})
    assert published.status_code == 200

    page = await api.get(f"/f/{form}")
    assert page.status_code == 200
    answers = {
        block["key"]: 1 if block["type"] == "number" else "o7"
        for block in body["blocks"]
        if "key" in block and block["type"] != "page_break"
    }
    posted = await api.post(f"/v1/forms/{form}/submissions", secret, json={"answers": answers})
    assert posted.status_code == 201, posted.text


def test_the_units_count_what_a_walk_evaluates_and_a_page_draws() -> None:
    # A dropdown of 1,000 options: its block and options drawn, its answer checked.
    one = _units(_dropdowns(1))
    assert one == (40 + 6 * 1001) + (2 + 100)
    # Variables read on every page are computed again after each answer they
    # read: reading every page's answer, as often as the pages (21 times);
    # reading the first page's only, twice.
    assert _units(_pages(20, "every")) > 8 * _units(_pages(20, "first"))


async def _heavy_form_saved_before_the_bound(session: AsyncSession, org_id: str) -> str:
    """A form whose stored version costs far more than the bound allows now
    (as one saved before the bound could): it is served as it is."""
    body = _pages(80, "every")
    body["variables"] = [
        {"name": f"v{j}", "type": "number", "value": body["variables"][0]["value"]}
        for j in range(20)
    ]
    blocks = BlockList.validate_python(body["blocks"])
    definition = Definition.model_validate({"variables": body["variables"]})
    form = await form_service.create(
        session,
        org_id,
        "Saved before the bound",
        blocks,
        status="published",
        definition=definition,
        # Taken unchecked, as the service took forms before it counted their cost.
        checked=Compiled(1, blocks, definition),
    )
    await session.commit()
    return form.id


async def test_another_organizations_requests_go_on_while_a_costly_form_is_checked(
    api: Api, session: AsyncSession
) -> None:
    a = await create_org(session)
    _, a_secret = await create_key(session, a, scopes=SCOPES)
    heavy = await _heavy_form_saved_before_the_bound(session, a.id)
    b = await create_org(session)
    _, b_secret = await create_key(session, b, scopes=SCOPES)
    b_form = await create_form(session, b)
    await session.commit()
    answers = {f"n{page}": page for page in range(80)}
    posted = await api.post(f"/v1/forms/{heavy}/submissions", a_secret, json={"answers": answers})
    assert posted.status_code == 201, posted.text  # served, and compiled in this process

    done = asyncio.Event()
    b_reads = 0

    async def read_b() -> None:
        nonlocal b_reads
        while not done.is_set():
            read = await api.get(f"/v1/forms/{b_form.id}", b_secret)
            assert read.status_code == 200
            b_reads += 1

    reading = asyncio.create_task(read_b())
    await asyncio.sleep(0)
    heavy_posts = await asyncio.gather(
        *(
            api.post(f"/v1/forms/{heavy}/submissions", a_secret, json={"answers": answers})
            for _ in range(3)
        )
    )
    done.set()
    await reading

    assert [post.status_code for post in heavy_posts] == [201] * 3
    # On the event loop, each of A's checks held B back until it was done:
    # B got a read in between at most. Off it, B reads on meanwhile.
    assert b_reads >= 30, b_reads


async def test_a_recalled_answer_shows_at_most_its_cut_on_the_page(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    blocks = [
        {"type": "long_text", "key": "story", "title": "Your story"},
        {"type": "page_break"},
        {"type": "paragraph", "text": "You wrote: {{story}}"},
        {"type": "short_text", "key": "more", "title": "More about {{story}}?"},
    ]
    form = await create_form(session, org, blocks=blocks)
    await session.commit()
    story = "a" * 5000

    page = await api.post(f"/f/{form.id}", data={"story": story, "_page": "0"})

    assert page.status_code == 200
    assert "a" * (RECALL_SHOWN - 1) + "…" in page.text
    assert "a" * RECALL_SHOWN not in page.text.replace(story, "")


async def test_another_organizations_requests_go_on_while_a_costly_form_is_saved(
    api: Api, session: AsyncSession
) -> None:
    a = await create_org(session)
    _, a_secret = await create_key(session, a, scopes=SCOPES)
    b = await create_org(session)
    _, b_secret = await create_key(session, b, scopes=SCOPES)
    b_form = await create_form(session, b)
    await session.commit()
    body = _rules(110)
    made = await api.post("/v1/forms", a_secret, json=body)
    assert made.status_code == 201, made.text
    form = made.json()["id"]

    done = asyncio.Event()
    b_reads = 0

    async def read_b() -> None:
        nonlocal b_reads
        while not done.is_set():
            read = await api.get(f"/v1/forms/{b_form.id}", b_secret)
            assert read.status_code == 200
            b_reads += 1

    reading = asyncio.create_task(read_b())
    await asyncio.sleep(0)
    saves = await asyncio.gather(
        *(
            api.patch(f"/v1/forms/{form}", a_secret, json={**body, "title": f"Rules {i}"})
            for i in range(3)
        )
    )
    done.set()
    await reading

    assert [save.status_code for save in saves] == [200] * 3
    # Checked on the event loop, each save held B back for its whole check;
    # checked off it, B reads on meanwhile.
    assert b_reads >= 30, b_reads


def _options(count: int) -> list[dict[str, str]]:
    return [{"value": f"o{j}", "label": f"Option {j}"} for j in range(count)]


def _translated_recall() -> dict[str, Any]:
    """Ten dropdowns whose French labels each recall a hidden field forty
    times: cheap in the form's own language, a page of 90 MB in French."""
    blocks = [
        {"type": "dropdown", "key": f"d{i}", "title": f"D{i}", "options": _options(1000)}
        for i in range(10)
    ]
    labels = {f"o{j}": "{{h}}" * 40 for j in range(1000)}
    french = {"blocks": {f"d{i}": {"options": labels} for i in range(2)}}
    return {
        "title": "Translated",
        "blocks": blocks,
        "hiddenFields": [{"key": "h"}],
        "translations": {"fr": french},
    }


def _patterns() -> dict[str, Any]:
    """Ten texts of up to 100,000 characters, each checked against a pattern."""
    return {
        "title": "Patterns",
        "blocks": [
            {
                "type": "short_text",
                "key": f"t{i}",
                "title": f"T{i}",
                "maxLength": 100_000,
                "pattern": "a[ab]{100}c",
            }
            for i in range(10)
        ],
    }


def _matches(pages: int) -> dict[str, Any]:
    """A long text, then pages each reading a variable that matches it
    twenty times: each match may read 10,000 characters."""
    blocks: list[dict[str, Any]] = [{"type": "long_text", "key": "story", "title": "Story"}]
    for page in range(pages):
        blocks.append({"type": "page_break"})
        blocks.append({"type": "short_text", "key": f"t{page}", "title": "Score {{vars.v}}"})
    test = {"if": [{"match": [{"var": "story"}, "a[ab]{50}c"]}, 1, 0]}
    variable = {"name": "v", "type": "number", "value": {"+": [test] * 20}}
    return {"title": "Matches", "blocks": blocks, "variables": [variable]}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        pytest.param(_translated_recall(), "/blocks", id="labels recalling in a translation"),
        pytest.param(_patterns(), "/logic", id="patterns on answers of 100,000 characters"),
        pytest.param(_matches(5), "/logic", id="matches read again on pages"),
    ],
)
async def test_what_an_answer_or_a_translation_makes_a_form_cost_counts_against_the_bound(
    api: Api, session: AsyncSession, body: dict[str, Any], pointer: str
) -> None:
    secret = await _writer(session)

    created = await api.post("/v1/forms", secret, json=body)

    assert created.status_code == 422, created.text
    (error,) = created.json()["errors"]
    assert error["pointer"] == pointer
    assert f"more than the {MAX_UNITS:,} a form may" in error["detail"]


@pytest.mark.parametrize(
    ("texts", "pointer", "detail"),
    [
        ({"title": "T" * 501}, "/translations/fr/blocks/q/title", "at most 500"),
        ({"title": "Hi {{nobody}}"}, "/translations/fr/blocks/q/title", "does not have"),
    ],
)
async def test_a_translated_text_must_fit_and_recall_what_the_form_has(
    api: Api, session: AsyncSession, texts: dict[str, Any], pointer: str, detail: str
) -> None:
    secret = await _writer(session)
    body = {
        "title": "Translated",
        "blocks": [{"type": "short_text", "key": "q", "title": "Name"}],
        "translations": {"fr": {"blocks": {"q": texts}}},
    }

    created = await api.post("/v1/forms", secret, json=body)

    assert created.status_code == 422, created.text
    (error,) = created.json()["errors"]
    assert error["pointer"] == pointer
    assert detail in error["detail"]


async def test_an_organizations_large_saves_are_limited_and_another_organizations_are_not(
    api: Api, session: AsyncSession
) -> None:
    a_secret = await _writer(session)
    b_secret = await _writer(session)
    # Large in bytes, cheap to check: 400 paragraphs of 2,000 characters.
    text = [{"type": "paragraph", "text": "Lorem ipsum. " * 150} for _ in range(400)]
    body = {"title": "Long", "blocks": [{"type": "number", "key": "n", "title": "N"}, *text]}
    size = len(orjson.dumps(body))
    # What each save takes of the 300 steps of 10,000 bytes a minute past its first 20,000.
    allowed = 300 // -(-(size - 20_000) // 10_000)

    answers = [
        (await api.post("/v1/forms", a_secret, json=body)).status_code for _ in range(allowed + 1)
    ]

    assert answers == [201] * allowed + [429], (size, answers)
    refused = await api.post("/v1/forms", a_secret, json=body)
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["type"] == "/problems/rate-limited"
    # A small form saves all the same, and so does another organization's large one.
    small = await api.post("/v1/forms", a_secret, json={"title": "Small", "blocks": text[:3]})
    assert small.status_code == 201
    assert (await api.post("/v1/forms", b_secret, json=body)).status_code == 201
