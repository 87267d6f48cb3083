"""GET /v1/forms/{formId}/summary: every figure checked against the same
figure the test works out itself from the form's export, after posts, edits
and deletes, with each filter; and bad filters refused clearly."""

import random
import statistics
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.db.session import create_sessionmaker
from formsapi.kit.time import parse_timestamp, shift
from formsapi.submission import repository as submission_repository
from formsapi.submission.retention import purge_tombstones
from formsapi.summary import held
from formsapi.summary import service as summary_service
from tests.conftest import Api
from tests.summary.calls import calls_to
from tests.support.factories import create_key, create_org, publish_over_api
from tests.support.hostile_text import TABLE, has_lone_surrogate

CHOICES = [{"value": v, "label": v.title()} for v in ("free", "team", "business")]
FEATURES = [{"value": v, "label": v.upper()} for v in ("api", "sso", "audit")]
FORM: dict[str, Any] = {
    "title": "Every question",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Name"},
        {"type": "long_text", "key": "story", "title": "Story"},
        {"type": "email", "key": "email", "title": "Email"},
        {"type": "url", "key": "site", "title": "Site"},
        {"type": "phone", "key": "phone", "title": "Phone"},
        {"type": "number", "key": "seats", "title": "Seats"},
        {"type": "rating", "key": "stars", "title": "Stars", "scale": 5},
        {"type": "single_choice", "key": "plan", "title": "Plan", "options": CHOICES,
         "allowOther": True},
        {"type": "multiple_choice", "key": "features", "title": "Features", "options": FEATURES},
        {"type": "date", "key": "day", "title": "Day"},
        {"type": "time", "key": "hour", "title": "Hour"},
        {"type": "date_time", "key": "when", "title": "When"},
        {"type": "yes_no", "key": "consent", "title": "Consent?"},
        {"type": "nps", "key": "nps", "title": "Recommend us?"},
        {"type": "scale", "key": "ease", "title": "Ease", "min": 0, "max": 4},
        {"type": "dropdown", "key": "country", "title": "Country", "options": [
            {"value": c, "label": c.upper()} for c in ("fr", "de", "jp")]},
        {"type": "ranking", "key": "priorities", "title": "Priorities", "options": FEATURES},
        {"type": "matrix", "key": "grid", "title": "Grid",
         "rows": [{"value": "speed", "label": "Speed"}, {"value": "price", "label": "Price"}],
         "columns": [{"value": "bad", "label": "Bad"}, {"value": "good", "label": "Good"}]},
        {"type": "file", "key": "cv", "title": "CV"},
    ],
    "hiddenFields": [{"key": "utm_source"}],
    "variables": [{"name": "score", "type": "number"}, {"name": "tier", "type": "text",
                  "value": {"if": [{">=": [{"var": "seats"}, 50]}, "big", "small"]}}],
    "logic": [
        {"if": {"==": [{"var": "consent"}, "yes"]},
         "then": [{"set": "score", "to": {"+": [{"var": "vars.score"}, 2]}}]},
        {"if": {"<=": [{"var": "nps"}, 6]}, "then": [{"jump": "sorry"}]},
    ],
    "endings": [{"key": "sorry", "title": "Sorry"}, {"key": "thanks", "title": "Thanks"}],
}  # fmt: skip
QUESTIONS = FORM["blocks"]


def _answers(rng: random.Random) -> dict[str, Any]:
    """A respondent's answers: each question answered or skipped at random."""
    maybe: dict[str, Any] = {
        "name": "Ada",
        "story": "Once",
        "email": "ada@example.com",
        "site": "https://example.com",
        "phone": "+1 555 0100",
        "seats": rng.choice([1, 2.5, 10, 50, 75, 1000]),
        "stars": rng.randint(1, 5),
        "plan": rng.choice(["free", "team", "business", "other"]),
        "features": ",".join(v for v in ("api", "sso", "audit") if rng.random() < 0.5) or "api",
        "day": "2026-11-02",
        "hour": "09:30",
        "when": "2026-11-02T09:30",
        "consent": rng.choice(["yes", "no"]),
        "nps": rng.randint(0, 10),
        "ease": rng.randint(0, 4),
        "country": rng.choice(["fr", "de", "jp"]),
        "priorities": ",".join(rng.sample(["api", "sso", "audit"], 3)),
        "grid.speed": rng.choice(["bad", "good"]),
        "grid.price": rng.choice(["bad", "good"]),
        "utm_source": rng.choice(["newsletter", "ads"]),
    }
    answers = {key: value for key, value in maybe.items() if rng.random() < 0.8}
    if answers.get("plan") == "other":
        answers["plan_other"] = "Enterprise"
    return answers


async def _export(api: Api, form_id: str, secret: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/forms/{form_id}/submissions/export", secret)
    assert response.status_code == 200, response.text
    return [orjson.loads(line) for line in response.content.splitlines()][:-1]


def _quantile(values: list[float], percent: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1]


def _numbers(values: list[float]) -> dict[str, Any]:
    return {
        "min": min(values, default=None),
        "max": max(values, default=None),
        "mean": statistics.fmean(values) if values else None,
        "sum": sum(values),
        "quantiles": {f"p{p}": _quantile(values, p) for p in (10, 25, 50, 75, 90)},
    }


def _expected(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary worked out from exported rows, question by question."""
    answers = [row["answers"] for row in rows]
    total = len(rows)
    questions = []
    for block in QUESTIONS:
        key, kind = block["key"], block["type"]
        given = [a[key] for a in answers if key in a]
        if kind == "matrix":
            keys = [f"{key}.{row['value']}" for row in block["rows"]]
            answered = sum(1 for a in answers if any(k in a for k in keys))
        else:
            answered = len(given)
        figures: dict[str, Any] = {"key": key, "type": kind, "title": block["title"],
                                   "answered": answered, "skipped": total - answered}  # fmt: skip
        if kind in ("single_choice", "dropdown", "multiple_choice"):
            chosen = Counter(v for value in given for v in str(value).split(","))
            figures["options"] = [
                {"value": o["value"], "label": o["label"], "count": chosen[o["value"]]}
                for o in block["options"]
            ]
            if block.get("allowOther"):
                figures["options"].append({"value": "other", "label": "Other",
                                           "count": chosen["other"]})  # fmt: skip
        elif kind == "yes_no":
            figures["options"] = [{"value": v, "count": given.count(v)} for v in ("yes", "no")]
        elif kind in ("rating", "nps", "scale"):
            low, high = {"rating": (1, 5), "nps": (0, 10), "scale": (0, 4)}[kind]
            figures["distribution"] = [
                {"value": v, "count": given.count(v)} for v in range(low, high + 1)
            ]
            figures["mean"] = statistics.fmean(given) if given else None
            figures["median"] = statistics.median(given) if given else None
            if kind == "nps":
                promoters = sum(1 for v in given if v >= 9)
                detractors = sum(1 for v in given if v <= 6)
                figures["nps"] = {
                    "score": round(100 * (promoters - detractors) / len(given), 1)
                    if given
                    else None,
                    "promoters": promoters,
                    "passives": len(given) - promoters - detractors,
                    "detractors": detractors,
                }
        elif kind == "number":
            figures.update(_numbers(given))
        elif kind == "ranking":
            orders = [str(v).split(",") for v in given]
            figures["ranks"] = [
                {
                    "value": o["value"],
                    "label": o["label"],
                    "meanRank": statistics.fmean(order.index(o["value"]) + 1 for order in orders)
                    if orders
                    else None,
                    "first": sum(1 for order in orders if order[0] == o["value"]),
                }
                for o in block["options"]
            ]
        elif kind == "matrix":
            figures["rows"] = []
            for row in block["rows"]:
                cells = [
                    a[f"{key}.{row['value']}"] for a in answers if f"{key}.{row['value']}" in a
                ]
                figures["rows"].append({
                    "value": row["value"], "label": row["label"], "answered": len(cells),
                    "columns": [{"value": c["value"], "label": c["label"],
                                 "count": cells.count(c["value"])} for c in block["columns"]],
                })  # fmt: skip
        questions.append(figures)
    scores = [a["vars.score"] for a in answers if "vars.score" in a]
    tiers = Counter(a["vars.tier"] for a in answers if "vars.tier" in a)
    endings = Counter(row["ending"] for row in rows)
    return {
        "submissions": total,
        "questions": questions,
        "variables": [
            {
                "name": "score",
                "type": "number",
                "distribution": [
                    {"value": v, "count": c} for v, c in sorted(Counter(scores).items())
                ],
                "distinctValues": len(set(scores)),
                **_numbers(scores),
            },
            {
                "name": "tier",
                "type": "text",
                "distribution": [
                    {"value": v, "count": c}
                    for v, c in sorted(tiers.items(), key=lambda item: (-item[1], item[0]))
                ],
                "distinctValues": len(tiers),
            },
        ],
        "endings": [
            {"key": key, "title": key.title(), "count": endings[key]} for key in ("sorry", "thanks")
        ],
    }


def _rounded(value: Any) -> Any:
    """Floats to 9 places, throughout: sums in another order differ in the last bits."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.fixture
def settings(database_url: str) -> Settings:
    # A test asks a summary per hostile text: more than a plan's minute allows.
    return Settings(database_url=database_url, redis_url=None, rate_limit_standard=100_000)


async def _summary(api: Api, form_id: str, secret: str, **params: Any) -> dict[str, Any]:
    response = await api.get(f"/v1/forms/{form_id}/summary", secret, params=params)
    assert response.status_code == 200, response.text
    # A filtered ask that found its form not held starts reading it into
    # memory: the test's next asks count from what is held.
    await held.HELD.settled()
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture(params=["held", "database"])
async def counted_in(
    request: pytest.FixtureRequest, api: Api, monkeypatch: pytest.MonkeyPatch
) -> str:
    """Where filtered summaries are counted: from the form held in memory
    (the test holds it first, with `_hold`), or by the database, as when a
    form is too big to hold (nothing may be held)."""
    if request.param == "database":
        monkeypatch.setattr(held.HELD, "capacity", 0)
        held.HELD.clear()
    return str(request.param)


async def _hold(
    api: Api, form_id: str, secret: str, counted_in: str, answer: str = "consent:no"
) -> None:
    if counted_in == "held":
        await _summary(api, form_id, secret, answer=answer)


def _figures(summary: dict[str, Any]) -> Any:
    return _rounded({k: summary[k] for k in ("submissions", "questions", "variables", "endings")})


@pytest.fixture
async def answered(api: Api, session: AsyncSession) -> tuple[str, str]:
    """The form of every question type, answered 40 times over three days,
    then edited and deleted here and there."""
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    rng = random.Random(30)  # noqa: S311 - a reproducible set of answers
    path = f"/v1/forms/{form_id}/submissions"
    ids = []
    for days_ago in (3, 1, 0):
        with shift(timedelta(days=-days_ago, minutes=-5)):
            for _ in range(14 if days_ago else 12):
                posted = await api.post(path, secret, json={"answers": _answers(rng)})
                assert posted.status_code == 201, posted.text
                ids.append(posted.json()["id"])
    for edited in ids[::7]:
        changed = await api.patch(f"{path}/{edited}", secret, json={"answers": {"nps": 10}})
        assert changed.status_code == 200, changed.text
    for deleted in ids[3::9]:
        assert (await api.delete(f"{path}/{deleted}", secret)).status_code == 204
    return form_id, secret


async def test_every_figure_matches_the_export_after_posts_edits_and_deletes(
    api: Api, answered: tuple[str, str]
) -> None:
    form_id, secret = answered
    rows = await _export(api, form_id, secret)

    summary = await _summary(api, form_id, secret)

    assert len(rows) == 35
    assert summary["formId"] == form_id
    assert summary["version"] == 1
    assert _figures(summary) == _rounded(_expected(rows))


async def test_a_summary_asked_again_shows_each_post_edit_and_delete_at_once(
    api: Api, answered: tuple[str, str], counted_in: str
) -> None:
    form_id, secret = answered
    path = f"/v1/forms/{form_id}/submissions"
    since = max(row["submittedAt"] for row in await _export(api, form_id, secret))
    asked: list[dict[str, Any]] = [
        {},
        {"answer": "plan:business"},
        {"since": since},
        {"hidden": "utm_source:newsletter", "since": since},
    ]
    wrong = []
    new_id = ""
    for change in ("post", "edit", "delete"):
        for params in asked:  # made, and kept by this process, before the change
            await _summary(api, form_id, secret, **params)
        if change == "post":
            posted = {"plan": "business", "utm_source": "newsletter"}
            made = await api.post(path, secret, json={"answers": posted})
            new_id = made.json()["id"]
        elif change == "edit":
            made = await api.patch(f"{path}/{new_id}", secret, json={"answers": {"nps": 3}})
        else:
            made = await api.delete(f"{path}/{new_id}", secret)
        assert made.status_code in (201, 200, 204), made.text
        rows = await _export(api, form_id, secret)
        for params in asked:
            kept = [
                row
                for row in rows
                if ("answer" not in params or row["answers"].get("plan") == "business")
                and ("since" not in params or row["submittedAt"] >= since)
                and ("hidden" not in params or row["answers"].get("utm_source") == "newsletter")
            ]
            if _figures(await _summary(api, form_id, secret, **params)) != _rounded(
                _expected(kept)
            ):
                wrong.append((change, params))
    assert not wrong


ANSWER_FILTERS: dict[str, Any] = {
    "plan:business": lambda a: a.get("plan") == "business",
    "plan:other": lambda a: a.get("plan") == "other",
    "features:sso": lambda a: "sso" in a.get("features", "").split(","),
    "consent:yes": lambda a: a.get("consent") == "yes",
    "stars:5": lambda a: a.get("stars") == 5,
    "seats:2.5": lambda a: a.get("seats") == 2.5,
    "seats:50": lambda a: a.get("seats") == 50,
    "grid.speed:good": lambda a: a.get("grid.speed") == "good",
    "country:jp": lambda a: a.get("country") == "jp",
}


async def test_an_answer_filter_summarizes_those_who_gave_that_answer(
    api: Api, answered: tuple[str, str], counted_in: str
) -> None:
    form_id, secret = answered
    await _hold(api, form_id, secret, counted_in)
    rows = await _export(api, form_id, secret)
    wrong = []
    for answer, keeps in ANSWER_FILTERS.items():
        kept = [row for row in rows if keeps(row["answers"])]
        assert 0 < len(kept) < len(rows), answer  # the filter takes some, not all

        summary = await _summary(api, form_id, secret, answer=answer)

        if summary["filters"]["answer"] != answer or _figures(summary) != _rounded(_expected(kept)):
            wrong.append(answer)
    assert not wrong


async def test_date_ranges_hidden_fields_and_both_together(
    api: Api, answered: tuple[str, str], counted_in: str
) -> None:
    form_id, secret = answered
    await _hold(api, form_id, secret, counted_in)
    rows = await _export(api, form_id, secret)
    times = sorted(parse_timestamp(row["submittedAt"]) for row in rows)
    since = times[0] + timedelta(days=1)  # past the first day's posts
    until = times[-1] - timedelta(hours=12)  # before today's

    def at(row: dict[str, Any]) -> datetime:
        return parse_timestamp(row["submittedAt"])

    ranged = [row for row in rows if since <= at(row) < until]
    newsletter = [row for row in rows if row["answers"].get("utm_source") == "newsletter"]
    both = [row for row in ranged if row in newsletter]
    ranges = {"since": since.isoformat(), "until": until.isoformat()}

    assert 0 < len(ranged) < len(rows)
    assert _figures(await _summary(api, form_id, secret, **ranges)) == _rounded(_expected(ranged))
    exactly = {"since": times[5].isoformat()}  # at or after: the sixth itself counts
    assert (await _summary(api, form_id, secret, **exactly))["submissions"] == len(rows) - 5
    hidden = await _summary(api, form_id, secret, hidden="utm_source:newsletter")
    assert _figures(hidden) == _rounded(_expected(newsletter))
    combined = await _summary(api, form_id, secret, hidden="utm_source:newsletter", **ranges)
    assert _figures(combined) == _rounded(_expected(both))
    ages = {"since": "0001-01-01T00:00:00Z", "until": "9999-12-31T23:59:59Z"}
    assert (await _summary(api, form_id, secret, **ages))["submissions"] == len(rows)


async def test_an_empty_range_and_a_filter_matching_nothing_are_summaries_of_nothing(
    api: Api, answered: tuple[str, str], counted_in: str
) -> None:
    form_id, secret = answered
    await _hold(api, form_id, secret, counted_in)

    future = await _summary(api, form_id, secret, since="2099-01-01T00:00:00Z")
    nobody = await _summary(api, form_id, secret, hidden="utm_source:nobody")
    no_one_then = await _summary(
        api, form_id, secret, answer="plan:business", since="2099-01-01T00:00:00Z"
    )
    last_second = await _summary(api, form_id, secret, since="9999-12-31T23:59:59Z")
    first_second = await _summary(api, form_id, secret, until="0001-01-01T00:00:01Z")

    for empty in (future, nobody, no_one_then, last_second, first_second):
        assert _figures(empty) == _rounded(_expected([]))
        assert empty["submissions"] == 0
        stars = next(q for q in empty["questions"] if q["key"] == "stars")
        assert stars["mean"] is None
        assert stars["distribution"][0] == {"value": 1, "count": 0}


async def test_a_form_held_in_memory_misses_no_delete_whose_tombstone_is_purged(
    api: Api, answered: tuple[str, str], engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    form_id, secret = answered
    await _hold(api, form_id, secret, "held")
    path = f"/v1/forms/{form_id}/submissions"
    rows = await _export(api, form_id, secret)
    business = [row for row in rows if row["answers"].get("plan") == "business"]
    assert (await api.delete(f"{path}/{business[0]['id']}", secret)).status_code == 204
    # Past the tombstone's days: the delete is gone from the change feed.
    assert await purge_tombstones(create_sessionmaker(engine), days=0) >= 1

    summary = await _summary(api, form_id, secret, answer="plan:business")
    again = await _summary(api, form_id, secret, answer="consent:yes")  # read again meanwhile

    assert summary["submissions"] == len(business) - 1
    left = [row for row in rows if row["id"] != business[0]["id"]]
    assert again["submissions"] == sum(row["answers"].get("consent") == "yes" for row in left)
    # Purged deletes made before the copy was read neither stop it being kept
    # nor send each ask to the change feed.
    copy = held.HELD.copy_of(form_id)
    feed_reads = calls_to(monkeypatch, submission_repository, "changes_after")
    await _summary(api, form_id, secret, answer="plan:team")
    assert copy is not None
    assert held.HELD.copy_of(form_id) is copy
    assert feed_reads == []


COLOR = {"type": "single_choice", "key": "color", "title": "Color", "options": CHOICES}


async def _poll(api: Api, session: AsyncSession, colors: list[str]) -> tuple[str, str]:
    """A form of one choice, `color`, answered once with each of `colors`."""
    form_id, secret, _ = await publish_over_api(api, session, {"title": "Poll", "blocks": [COLOR]})
    for color in colors:
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"color": color}}
        )
        assert posted.status_code == 201, posted.text
    return form_id, secret


async def _add_question(api: Api, form_id: str, secret: str, block: dict[str, Any]) -> Any:
    """The poll with `block` after its color: its new version."""
    changed = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": [COLOR, block]})
    assert changed.status_code == 200, changed.text
    return changed.json()


async def test_a_held_form_whose_questions_change_counts_the_new_ones(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _poll(api, session, ["free", "team"])
    await _summary(api, form_id, secret, answer="color:free")  # held from here
    added = {"type": "single_choice", "key": "size", "title": "Size", "options": CHOICES}
    await _add_question(api, form_id, secret, added)
    await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"color": "team", "size": "business"}},
    )

    by_size = await _summary(api, form_id, secret, answer="size:business")
    by_color = await _summary(api, form_id, secret, answer="color:team")

    assert by_size["submissions"] == 1
    size = next(q for q in by_color["questions"] if q["key"] == "size")
    assert by_color["submissions"] == 2
    assert [o["count"] for o in size["options"]] == [0, 0, 1]


async def test_a_hidden_value_of_any_character_finds_its_own_submission(
    api: Api, session: AsyncSession, counted_in: str
) -> None:
    form = {"title": "Links", "blocks": [COLOR], "hiddenFields": [{"key": "utm_source"}]}
    form_id, secret, _ = await publish_over_api(api, session, form)
    path = f"/v1/forms/{form_id}/submissions"
    sent = []
    for hostile in TABLE:
        if has_lone_surrogate(hostile.text):
            continue  # no query string can carry it
        value = f"a{hostile.text}b"
        answers = {"color": "team", "utm_source": value}
        if (await api.post(path, secret, json={"answers": answers})).status_code == 201:
            sent.append((hostile.name, value))  # (a refused one is the validation's test)
    await _hold(api, form_id, secret, counted_in, answer="color:team")

    wrong = [
        name
        for name, value in sent
        if (await _summary(api, form_id, secret, hidden=f"utm_source:{value}"))["submissions"] != 1
    ]

    assert len(sent) > 50
    assert not wrong


async def test_a_text_filter_takes_no_number_left_by_an_earlier_version(
    api: Api, session: AsyncSession, counted_in: str
) -> None:
    digits = [{"value": v, "label": v} for v in ("1", "2", "3")]
    rating = {"type": "rating", "key": "x", "title": "X", "scale": 5}
    form_id, secret, _ = await publish_over_api(api, session, {"title": "P", "blocks": [rating]})
    path = f"/v1/forms/{form_id}/submissions"
    for stars in (1, 3, 3):
        await api.post(path, secret, json={"answers": {"x": stars}})
    choice = {"type": "multiple_choice", "key": "x", "title": "X", "options": digits}
    changed = await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": [choice]})
    assert changed.status_code == 200, changed.text
    await api.post(path, secret, json={"answers": {"x": "1,3"}})
    await _hold(api, form_id, secret, counted_in, answer="x:2")

    chose = await _summary(api, form_id, secret, answer="x:3")

    assert chose["submissions"] == 1  # the choice of "3", not the 3 stars


async def test_a_number_counts_as_its_value_however_long_the_database_writes_it(
    api: Api, session: AsyncSession, counted_in: str
) -> None:
    blocks = [{"type": "number", "key": "n", "title": "N"}, COLOR]
    form_id, secret, _ = await publish_over_api(api, session, {"title": "P", "blocks": blocks})
    for n in (1e-250, 3):
        posted = await api.post(
            f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"n": n, "color": "team"}}
        )
        assert posted.status_code == 201, posted.text
    await _hold(api, form_id, secret, counted_in, answer="color:free")

    summary = await _summary(api, form_id, secret, answer="color:team")

    n = summary["questions"][0]
    assert (n["answered"], n["min"], n["max"]) == (2, 1e-250, 3)


async def test_a_version_filter_summarizes_that_versions_submissions_by_its_questions(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _poll(api, session, ["free", "free", "team"])
    added = {"type": "yes_no", "key": "again", "title": "Again?"}
    assert (await _add_question(api, form_id, secret, added))["version"] == 2
    await api.post(
        f"/v1/forms/{form_id}/submissions",
        secret,
        json={"answers": {"color": "business", "again": "yes"}},
    )

    first = await _summary(api, form_id, secret, version=1)
    second = await _summary(api, form_id, secret, version=2)
    every = await _summary(api, form_id, secret)

    assert (first["version"], first["submissions"]) == (1, 3)
    assert [q["key"] for q in first["questions"]] == ["color"]
    assert [o["count"] for o in first["questions"][0]["options"]] == [2, 1, 0]
    assert (second["version"], second["submissions"]) == (2, 1)
    assert [o["count"] for o in second["questions"][0]["options"]] == [0, 0, 1]
    assert (every["version"], every["submissions"]) == (2, 4)
    again = every["questions"][1]
    assert (again["answered"], again["skipped"], again["options"][0]["count"]) == (1, 3, 1)


BAD_FILTERS: list[tuple[dict[str, Any], int, str]] = [
    ({"answer": "plan"}, 400, "a key, a colon and a value"),
    ({"answer": ":free"}, 400, "a key, a colon and a value"),
    ({"answer": "nobody:free"}, 400, "no question 'nobody'"),
    ({"answer": "plan:gold"}, 400, "no choice 'gold'"),
    ({"answer": "name:Ada"}, 400, "free text"),
    ({"answer": "plan_other:x"}, 400, "Other text"),
    ({"answer": "priorities:api"}, 400, "ranking"),
    ({"answer": "stars:many"}, 400, "not one"),
    ({"answer": "stars:NaN"}, 400, "not one"),
    ({"answer": "seats:1e999"}, 400, "not one"),
    ({"answer": "seats:1e20"}, 400, "beyond it"),
    ({"answer": "seats:-1e16"}, 400, "beyond it"),
    ({"answer": "plan:" + "x" * 301}, 400, "longer than 300"),
    ({"answer": "plan:" + "x" * 500}, 400, "'answer'"),
    ({"answer": "plan:fr\x00ee"}, 400, "NUL"),
    ({"hidden": "utm:ads"}, 400, "no hidden field 'utm'; it has: utm_source"),
    ({"hidden": "utm_source"}, 400, "a key, a colon and a value"),
    ({"hidden": "utm_source:a\x00b"}, 400, "NUL"),
    ({"since": "yesterday"}, 400, "'since'"),
    ({"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"}, 400, "later"),
    ({"since": "2026-11-02T00:00:00Z", "until": "2026-11-02T00:00:00Z"}, 400, "later"),
    ({"version": 9}, 404, "no version 9"),
    ({"version": 0}, 400, "'version'"),
    ({"version": 2**40}, 400, "'version'"),
]


async def test_bad_filters_are_refused_with_a_clear_problem(
    api: Api, answered: tuple[str, str]
) -> None:
    form_id, secret = answered
    wrong = []
    for params, status, detail in BAD_FILTERS:
        response = await api.get(f"/v1/forms/{form_id}/summary", secret, params=params)

        problem = response.json() if response.status_code < 500 else {}
        if (
            response.status_code != status
            or response.headers["content-type"] != "application/problem+json"
            or detail not in problem.get("detail", "")
        ):
            wrong.append((params, response.status_code, response.text[:200]))
    assert not wrong


async def test_another_organizations_form_answers_like_a_missing_one(
    api: Api, session: AsyncSession, answered: tuple[str, str]
) -> None:
    form_id, _ = answered
    other = await create_org(session)
    _, stranger = await create_key(session, other, scopes=["submissions:read"])
    _, forms_only = await create_key(session, other, scopes=["forms:read"])
    await session.commit()

    theirs = await api.get(f"/v1/forms/{form_id}/summary", stranger)
    missing = await api.get("/v1/forms/frm_00000000000000000000000000/summary", stranger)
    unscoped = await api.get(f"/v1/forms/{form_id}/summary", forms_only)

    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["detail"].replace(form_id, "?") == missing.json()["detail"].replace(
        "frm_00000000000000000000000000", "?"
    )
    assert unscoped.status_code == 403


async def test_summaries_counted_from_rows_take_turns_within_an_organization(
    api: Api, session: AsyncSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {"type": "single_choice", "key": "plan", "title": "Plan", "options": CHOICES}
    form_id, secret, organization_id = await publish_over_api(
        api, session, {"title": "Turns", "blocks": [plan]}
    )
    await api.post(f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"plan": "team"}})
    monkeypatch.setattr(summary_service, "TURN_WAIT", 0.2)
    url = f"/v1/forms/{form_id}/summary"

    async with summary_service.TURNS.turn(organization_id):  # another one, counting
        waited = await api.get(url, secret, params={"answer": "plan:team"})
        kept = await api.get(url, secret)
    after = await api.get(url, secret, params={"answer": "plan:team"})

    assert waited.status_code == 429
    assert waited.headers["retry-after"] == "5"
    assert waited.json()["type"].endswith("/summary-in-progress")
    assert kept.status_code == after.status_code == 200  # kept counts take no turn
    assert after.json()["submissions"] == 1
