from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Submission
from formsapi.submission import repository as submission_repository
from formsapi.submission.repository import paging
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def _form_with_times(session: AsyncSession, times: list[datetime]) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org)
    for index, moment in enumerate(times):
        await create_submission(
            session, form, submitted_at=moment, submission_id=f"sub_{index:04d}"
        )
    await session.commit()
    return form.id, secret


async def test_most_recent_first_with_id_tie_break(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form_with_times(
        session, [T0, T0 + timedelta(hours=1), T0, T0 + timedelta(hours=1), T0 - timedelta(1)]
    )

    response = await api.get(f"/v1/forms/{form_id}/submissions", secret)

    assert response.status_code == 200
    body = response.json()
    assert [s["id"] for s in body["data"]] == [
        "sub_0003",
        "sub_0001",
        "sub_0002",
        "sub_0000",
        "sub_0004",
    ]
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 5}
    assert body["data"][0] == {
        "id": "sub_0003",
        "formId": form_id,
        "formVersion": 1,
        "submittedAt": "2026-03-01T13:00:00.000Z",
        "answers": {"name": "Ada", "colors": "red"},
    }


async def test_pages_with_equal_timestamps_neither_repeat_nor_skip(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form_with_times(session, [T0] * 7 + [T0 + timedelta(1)] * 3)

    seen = []
    for page in (1, 2, 3, 4):
        body = (
            await api.get(f"/v1/forms/{form_id}/submissions?limit=3&page={page}", secret)
        ).json()
        assert body["pagination"]["total"] == 10
        seen += [s["id"] for s in body["data"]]
    assert sorted(seen) == [f"sub_{i:04d}" for i in range(10)]
    assert len(seen) == 10


async def test_limit_defaults_to_50_and_stops_at_100(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form_with_times(
        session, [T0 + timedelta(seconds=i) for i in range(120)]
    )

    default = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()
    most = (await api.get(f"/v1/forms/{form_id}/submissions?limit=100&page=2", secret)).json()
    too_many = await api.get(f"/v1/forms/{form_id}/submissions?limit=101", secret)

    assert len(default["data"]) == 50
    assert default["pagination"] == {"page": 1, "limit": 50, "total": 120}
    assert len(most["data"]) == 20
    assert most["pagination"] == {"page": 2, "limit": 100, "total": 120}
    assert too_many.status_code == 400


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        ("2026-03-01T12:00:00Z", ["sub_0003", "sub_0002"]),  # strictly after T0
        ("2026-03-01T12:00:00", ["sub_0003", "sub_0002"]),  # no offset means UTC
        ("2026-03-01T12:00:00.000+00:00", ["sub_0003", "sub_0002"]),
        ("2026-03-01T13:00:00+01:00", ["sub_0003", "sub_0002"]),  # = 12:00Z
        ("2026-03-01T11:59:59.999Z", ["sub_0003", "sub_0002", "sub_0001"]),
        ("2026-03-01T07:30:00-05:00", ["sub_0003"]),  # = 12:30Z
        ("2026-03-01", ["sub_0003", "sub_0002", "sub_0001"]),  # a date is midnight UTC
        ("2030-01-01T00:00:00Z", []),
    ],
)
async def test_since_is_strictly_after_and_honors_offsets(
    api: Api, session: AsyncSession, since: str, expected: list[str]
) -> None:
    form_id, secret = await _form_with_times(
        session,
        [T0 - timedelta(days=1), T0, T0 + timedelta(minutes=15), T0 + timedelta(hours=1)],
    )

    response = await api.get(f"/v1/forms/{form_id}/submissions?since={quote(since)}", secret)

    assert response.status_code == 200
    body = response.json()
    assert [s["id"] for s in body["data"]] == expected
    assert body["pagination"]["total"] == len(expected)


async def test_since_with_an_unencoded_plus_offset(api: Api, session: AsyncSession) -> None:
    # curl users write `since=...+01:00` raw; the '+' arrives as a space.
    form_id, secret = await _form_with_times(session, [T0, T0 + timedelta(hours=2)])

    response = await api.get(
        f"/v1/forms/{form_id}/submissions?since=2026-03-01T13:00:00+01:00", secret
    )

    assert [s["id"] for s in response.json()["data"]] == ["sub_0001"]


async def test_since_total_counts_beyond_the_page(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form_with_times(
        session, [T0 + timedelta(minutes=i) for i in range(30)]
    )

    body = (
        await api.get(
            f"/v1/forms/{form_id}/submissions?since=2026-03-01T12:09:00Z&limit=5&page=2", secret
        )
    ).json()

    assert body["pagination"] == {"page": 2, "limit": 5, "total": 20}
    assert next(s["submittedAt"] for s in body["data"]) == "2026-03-01T12:24:00.000Z"


# Rows over three days, some exactly on hour and day boundaries.
_SPREAD = [
    T0 + timedelta(hours=h, minutes=m)
    for h, m in (
        *[(-13, 0), (-12, 59), (-1, 30), (0, 0), (0, 1), (11, 59), (12, 0), (12, 0)],
        *[(23, 0), (35, 59), (36, 0), (36, 1), (47, 30), (59, 59)],
    )
]


@pytest.mark.parametrize(
    "since",
    [
        T0 - timedelta(days=2),  # before every row
        T0 - timedelta(hours=12),  # a midnight (the first day's)
        T0 - timedelta(hours=12, microseconds=1),  # just before a midnight
        T0 - timedelta(minutes=30),  # on a row
        T0,  # an hour boundary holding a row
        T0 + timedelta(hours=11, minutes=59, seconds=30),  # the last partial hour of a day
        T0 + timedelta(hours=12),  # a midnight holding two rows
        T0 + timedelta(hours=12, minutes=0, seconds=1),
        T0 + timedelta(hours=35, minutes=30),  # the day after next, mid-hour
        T0 + timedelta(hours=60),  # after every row
    ],
)
async def test_since_totals_are_exact_across_hours_and_days(
    api: Api, session: AsyncSession, since: datetime
) -> None:
    # Totals add the rows of since's partial hour, whole hours to the next
    # midnight and whole days after it; every boundary must count each row once.
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=["submissions:read", "submissions:write"])
    form = await create_form(session, org)
    for index, moment in enumerate(_SPREAD):
        await create_submission(
            session, form, submitted_at=moment, submission_id=f"sub_{index:04d}"
        )
    await session.commit()
    url = f"/v1/forms/{form.id}/submissions"
    query = f"?limit=1&since={quote(since.isoformat())}"

    before = (await api.get(url + query, secret)).json()["pagination"]["total"]
    for removed in ["sub_0006", "sub_0012"]:  # at a midnight, then mid-day
        assert (await api.delete(f"{url}/{removed}", secret)).status_code == 204
    after = (await api.get(url + query, secret)).json()["pagination"]["total"]

    assert before == sum(moment > since for moment in _SPREAD)
    assert after == sum(moment > since for i, moment in enumerate(_SPREAD) if i not in (6, 12))


@pytest.mark.parametrize("since", ["9999-12-31T23:59:59Z", "9999-12-30T23:30:00Z"])
async def test_a_since_at_the_end_of_time_answers_an_empty_page(
    api: Api, session: AsyncSession, since: str
) -> None:
    form_id, secret = await _form_with_times(session, [T0])

    response = await api.get(f"/v1/forms/{form_id}/submissions?since={since}", secret)

    assert response.status_code == 200
    assert response.json()["pagination"]["total"] == 0


async def test_a_since_past_what_utc_can_hold_is_refused(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form_with_times(session, [T0])

    response = await api.get(
        f"/v1/forms/{form_id}/submissions?since={quote('9999-12-31T23:00:00-05:00')}", secret
    )

    assert response.status_code == 400  # as any malformed query parameter
    assert response.headers["content-type"] == "application/problem+json"


async def test_submissions_of_one_form_only(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form, other = await create_form(session, org), await create_form(session, org)
    kept = await create_submission(session, form)
    await create_submission(session, other)
    await session.commit()

    body = (await api.get(f"/v1/forms/{form.id}/submissions", secret)).json()

    assert [s["id"] for s in body["data"]] == [kept.id]
    assert body["pagination"]["total"] == 1


async def test_key_without_submissions_scope_is_forbidden(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=["forms:read"])
    form = await create_form(session, org)
    await session.commit()

    response = await api.get(f"/v1/forms/{form.id}/submissions", secret)

    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"
    assert "submissions:read" in response.json()["detail"]


@pytest.mark.parametrize("chunk", [1000, 2], ids=["one step", "many steps"])
async def test_deep_pages_match_the_order_of_shallow_ones(
    api: Api, session: AsyncSession, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # A seek reads the daily counts `chunk` days at a time, then the found day's
    # hours as many at a time; two a step makes it walk many steps of each, as
    # it would on a sparse form.
    monkeypatch.setattr(paging, "SEEK_CHUNK", chunk)
    # Deep offsets are found through the daily and hourly counts (the rows span
    # twelve days); pages must still tile the same newest-first order, ties by id.
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org)
    times = [T0 + timedelta(minutes=50 * (i // 3)) for i in range(1030)]  # triples share a time
    await session.execute(
        insert(Submission),
        [
            {
                "id": f"sub_{i:05d}",
                "organization_id": org.id,
                "form_id": form.id,
                "submitted_at": moment,
                "answers": {"n": i},
                "change_seq": i + 1,
            }
            for i, moment in enumerate(times)
        ],
    )
    await submission_repository.rebuild_counts(session, org.id)
    await session.commit()
    expected = [
        f"sub_{i:05d}" for i in sorted(range(1030), key=lambda i: (times[i], i), reverse=True)
    ]

    pages = []
    for page in range(1, 12):
        body = (
            await api.get(f"/v1/forms/{form.id}/submissions?limit=100&page={page}", secret)
        ).json()
        assert body["pagination"] == {"page": page, "limit": 100, "total": 1030}
        pages += [s["id"] for s in body["data"]]
    since = (
        await api.get(
            f"/v1/forms/{form.id}/submissions?limit=10&page=60&since=2026-03-01T12:00:00Z", secret
        )
    ).json()

    past_the_end = (
        await api.get(f"/v1/forms/{form.id}/submissions?limit=100&page=40", secret)
    ).json()
    # The deepest page allowed: its offset passes what a 32-bit integer holds.
    deepest = await api.get(f"/v1/forms/{form.id}/submissions?limit=100&page=2147483647", secret)

    assert pages == expected
    assert past_the_end == {"data": [], "pagination": {"page": 40, "limit": 100, "total": 1030}}
    assert deepest.status_code == 200
    assert deepest.json()["data"] == []
    assert since["pagination"]["total"] == 1027  # all but the three at T0
    assert [s["id"] for s in since["data"]] == expected[590:600]
    assert since["data"][0]["answers"] == {"n": int(expected[590][4:])}

    # A `since` inside a day and an hour: the seek counts both whole, and the
    # page drops their rows at or before it (the oldest of each).
    cut = times[400] + timedelta(seconds=1)  # after the triple 399-401
    tiled = []
    for page in range(1, 8):
        body = (
            await api.get(
                f"/v1/forms/{form.id}/submissions?limit=100&page={page}"
                f"&since={quote(cut.isoformat())}",
                secret,
            )
        ).json()
        assert body["pagination"]["total"] == 1030 - 402
        tiled += [s["id"] for s in body["data"]]
    assert tiled == [i for i in expected if int(i[4:]) >= 402]
