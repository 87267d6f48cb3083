"""GET /v1/forms/{formId}/summary/timeseries: every bucket checked against
the same figures the test works out from the export, in time zones whose
days change length (Europe/Paris on 25 October 2026) or whose offsets are
not whole hours (Asia/Kolkata), after edits and deletes; bad input refused."""

import statistics
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import parse_timestamp, shift, utcnow
from tests.conftest import Api
from tests.support.factories import publish_over_api

PLANS = [{"value": v, "label": v.title()} for v in ("free", "team")]
FORM = {
    "title": "Over time",
    "blocks": [
        {"type": "single_choice", "key": "plan", "title": "Plan", "options": PLANS},
        {"type": "rating", "key": "stars", "title": "Stars"},
        {"type": "short_text", "key": "name", "title": "Name"},
    ],
}
# Around Paris's change back to winter time (25 October 2026, 01:00 UTC) and
# Kolkata's midnights (18:30 UTC): on both sides of each local midnight.
MOMENTS = [
    ("2026-10-24T21:30:00Z", "free", 5),
    ("2026-10-24T22:30:00Z", "team", 4),
    ("2026-10-25T01:30:00Z", "team", 2),
    ("2026-10-25T18:10:00Z", "free", 3),
    ("2026-10-25T18:50:00Z", "free", 1),
    ("2026-10-25T22:30:00Z", "team", 5),
    ("2026-10-25T23:30:00Z", "free", 4),
    ("2026-10-26T18:29:59Z", "team", 2),
    ("2026-10-26T18:30:00Z", "team", 3),
]
RANGE = {"since": "2026-10-23T12:00:00Z", "until": "2026-10-28T00:00:00Z"}


async def _posted(api: Api, session: AsyncSession) -> tuple[str, str]:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    path = f"/v1/forms/{form_id}/submissions"
    ids = []
    for moment, plan, stars in MOMENTS:
        with shift(parse_timestamp(moment) - utcnow()):
            posted = await api.post(path, secret, json={"answers": {"plan": plan, "stars": stars}})
        assert posted.status_code == 201, posted.text
        ids.append(posted.json()["id"])
    edited = await api.patch(f"{path}/{ids[1]}", secret, json={"answers": {"plan": "free"}})
    assert edited.status_code == 200, edited.text
    assert (await api.delete(f"{path}/{ids[2]}", secret)).status_code == 204
    return form_id, secret


async def _rows(api: Api, form_id: str, secret: str) -> list[dict[str, Any]]:
    response = await api.get(f"/v1/forms/{form_id}/submissions/export", secret)
    return [orjson.loads(line) for line in response.content.splitlines()][:-1]


def _expected_days(
    rows: list[dict[str, Any]], zone: ZoneInfo, first: date, last: date, question: str
) -> list[dict[str, Any]]:
    """Each local day from `first` to `last`, worked out from the rows."""
    by_day: dict[date, list[dict[str, Any]]] = {}
    for row in rows:
        local = parse_timestamp(row["submittedAt"]).astimezone(zone).date()
        by_day.setdefault(local, []).append(row["answers"])
    expected = []
    day = first
    while day <= last:
        answers = by_day.get(day, [])
        bucket: dict[str, Any] = {
            "start": datetime(day.year, day.month, day.day, tzinfo=zone).isoformat(),
            "end": datetime.combine(day + timedelta(days=1), datetime.min.time(), zone).isoformat(),
            "submissions": len(answers),
            "answered": sum(1 for a in answers if question in a),
        }
        if question == "plan":
            chosen = Counter(a["plan"] for a in answers if "plan" in a)
            bucket["options"] = [
                {"value": p["value"], "label": p["label"], "count": chosen[p["value"]]}
                for p in PLANS
            ]
        else:
            stars = [a["stars"] for a in answers if "stars" in a]
            bucket["mean"] = statistics.fmean(stars) if stars else None
        expected.append(bucket)
        day += timedelta(days=1)
    return expected


async def test_days_of_a_zone_whose_day_changes_length_match_the_export(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _posted(api, session)
    rows = await _rows(api, form_id, secret)
    params = {**RANGE, "interval": "day", "tz": "Europe/Paris", "question": "plan"}

    series = (
        await api.get(f"/v1/forms/{form_id}/summary/timeseries", secret, params=params)
    ).json()

    zone = ZoneInfo("Europe/Paris")
    assert series["question"] == {"key": "plan", "type": "single_choice", "title": "Plan"}
    assert series["buckets"] == _expected_days(
        rows, zone, date(2026, 10, 23), date(2026, 10, 28), "plan"
    )
    long_day = series["buckets"][2]
    assert (long_day["start"], long_day["end"]) == (
        "2026-10-25T00:00:00+02:00",
        "2026-10-26T00:00:00+01:00",
    )
    # 00:30 CEST, then 19:10, 19:50 and 23:30 CET (02:30 CET was deleted).
    assert long_day["submissions"] == 4
    assert sum(b["submissions"] for b in series["buckets"]) == len(rows) == 8


async def test_days_of_a_zone_half_an_hour_off_utc_count_each_side_of_midnight(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _posted(api, session)
    rows = await _rows(api, form_id, secret)
    params = {**RANGE, "interval": "day", "tz": "Asia/Kolkata", "question": "stars"}

    series = (
        await api.get(f"/v1/forms/{form_id}/summary/timeseries", secret, params=params)
    ).json()

    zone = ZoneInfo("Asia/Kolkata")
    assert series["buckets"] == _expected_days(
        rows, zone, date(2026, 10, 23), date(2026, 10, 28), "stars"
    )
    # 18:10 and 18:50 UTC straddle Kolkata's midnight (18:30 UTC): two days.
    by_start = {b["start"][:10]: b["submissions"] for b in series["buckets"]}
    assert (by_start["2026-10-25"], by_start["2026-10-26"]) == (3, 4)


async def test_hours_weeks_and_months_have_every_bucket_even_empty_ones(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _posted(api, session)
    url = f"/v1/forms/{form_id}/summary/timeseries"

    hours = (
        await api.get(
            url,
            secret,
            params={
                "interval": "hour",
                "since": "2026-10-25T17:00:00Z",
                "until": "2026-10-25T23:00:00Z",
            },
        )
    ).json()["buckets"]
    weeks = (
        await api.get(url, secret, params={**RANGE, "interval": "week", "tz": "America/New_York"})
    ).json()["buckets"]
    months = (
        await api.get(
            url,
            secret,
            params={
                "interval": "month",
                "since": "2026-08-15T00:00:00Z",
                **{"until": RANGE["until"]},
            },
        )
    ).json()["buckets"]

    assert [(b["start"][11:16], b["submissions"]) for b in hours] == [
        ("17:00", 0), ("18:00", 2), ("19:00", 0), ("20:00", 0), ("21:00", 0), ("22:00", 1),
    ]  # fmt: skip
    assert [(b["start"], b["submissions"]) for b in weeks] == [
        ("2026-10-19T00:00:00-04:00", 6),  # Monday; the 25th is a Sunday
        ("2026-10-26T00:00:00-04:00", 2),
    ]
    assert [(b["start"][:10], b["submissions"]) for b in months] == [
        ("2026-08-01", 0), ("2026-09-01", 0), ("2026-10-01", 8),
    ]  # fmt: skip
    assert "answered" not in hours[0]


async def test_bad_series_requests_are_refused_clearly(api: Api, session: AsyncSession) -> None:
    form_id, secret, _ = await publish_over_api(api, session, FORM)
    url = f"/v1/forms/{form_id}/summary/timeseries"
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"tz": "Mars/Olympus_Mons"}, "not a time zone"),
        ({"tz": "../../etc/passwd"}, "not a time zone"),
        ({"tz": "Europe/Paris\x00"}, "not a time zone"),
        ({"interval": "minute"}, "'interval'"),
        ({"question": "name"}, "not followed over time"),
        ({"question": "nobody"}, "no question 'nobody'"),
        ({"interval": "hour", "since": "2020-01-01T00:00:00Z"}, "more than 1000 hours"),
        ({"since": "1971-01-01T00:00:00Z", "interval": "day"}, "more than 1000 days"),
        ({"since": "0001-01-01T00:00:00Z", "tz": "Asia/Tokyo"}, "between the years 1970"),
        ({"until": "9999-12-31T23:00:00Z", "tz": "America/New_York"}, "between the years"),
        (
            {
                "since": "8999-12-31T23:30:00Z",
                "until": "9000-01-01T00:00:00Z",
                "interval": "month",
                "tz": "America/New_York",
            },
            None,
        ),
        ({"since": "1970-01-01T00:00:00Z", "interval": "month", "tz": "Asia/Tokyo"}, None),
        ({**RANGE, "until": RANGE["since"]}, "later"),
        ({"version": 3}, "no version 3"),
    ]
    wrong = []
    for params, detail in cases:
        response = await api.get(url, secret, params=params)
        if detail is None:  # a range that is fine, at the edge of what is taken
            refused = response.status_code != 200
        else:
            said = response.json().get("detail", "") if response.status_code < 500 else ""
            refused = response.status_code not in (400, 404) or detail not in said
        if refused:
            wrong.append((params, response.status_code, response.text[:200]))
    assert not wrong
    default = (await api.get(url, secret)).json()
    assert len(default["buckets"]) in (30, 31)  # 30 days back from now, by UTC day
    assert default["buckets"][-1]["end"] > datetime.now(UTC).isoformat()
