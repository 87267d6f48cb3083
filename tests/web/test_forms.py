"""The forms list, one form's page, and its CSV download."""

import csv
import io
import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import isoformat_z, utcnow
from formsapi.models import Role
from formsapi.submission import export
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_submission
from tests.web.conftest import Browser, SignedIn, add_member

HEADER = ["submission_id", "submitted_at", "form_version", "name", "email", "age", "colors"]


def _rows(response: httpx.Response) -> list[list[str]]:
    text = response.content.decode("utf-8")
    assert text.startswith("\ufeff")  # spreadsheets read it as UTF-8
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


async def test_the_list_shows_each_forms_status_and_response_count(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    draft = await create_form(session, organization, title="Draft one", status="draft")
    live = await create_form(session, organization, title="Live one", status="published")
    closed = await create_form(session, organization, title="Closed one", status="closed")
    for _ in range(3):
        await create_submission(session, live)
    await create_submission(session, closed)
    await session.commit()
    browser = await signed_in(owner)

    page = (await browser.get("/forms")).text

    assert "3 forms in Org" in page
    for form, status, count in ((draft, "draft", 0), (live, "published", 3), (closed, "closed", 1)):
        row = re.search(rf'<a href="/forms/{form.id}">{form.title}</a>.*?</tr>', page, re.S)
        assert row, form.title
        assert f'<span class="badge {status}">{status}</span>' in row.group(0)
        assert f'class="num">{count}</td>' in row.group(0)


async def test_the_list_pages_past_fifty_forms(session: AsyncSession, signed_in: SignedIn) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    now = utcnow()
    for n in range(51):
        await create_form(
            session, organization, title=f"Form {n:02}", created_at=now - timedelta(minutes=n)
        )
    await session.commit()
    browser = await signed_in(owner)

    first = (await browser.get("/forms")).text
    second = (await browser.get("/forms?page=2")).text

    assert "Page 1 of 2" in first
    assert "Form 00<" in first
    assert "Form 50<" not in first
    assert "Form 50<" in second
    assert "Form 00<" not in second


async def test_a_forms_page_shows_its_blocks_recent_submissions_and_a_chart(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization, title="Feedback")
    now = utcnow()
    await create_submission(
        session, form, submitted_at=now - timedelta(hours=1), answers={"name": "Ada"}
    )
    await create_submission(session, form, submitted_at=now, answers={"name": "Grace"})
    await session.commit()
    browser = await signed_in(owner)

    page = await browser.get(f"/forms/{form.id}")
    html = page.text

    assert page.status_code == 200
    assert "<h1>Feedback" in html
    assert "<strong>2</strong> responses" in html
    for title in ("Name", "Email", "Age", "Colors"):  # the question blocks
        assert f"<strong>{title}</strong>" in html
    assert "About you" in html  # the heading block
    assert "Red, Blue" in html  # the choice's options
    assert html.index(">Grace</td>") < html.index(">Ada</td>")  # newest first
    assert "<svg" in html
    assert "Bar chart: 2 submissions over the last 90 days" in html
    assert html.count('<rect class="bar"') >= 1
    assert f'href="/forms/{form.id}/submissions.csv"' in html


async def test_a_form_without_submissions_says_so_and_exports_only_a_header(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    await session.commit()
    browser = await signed_in(owner)

    html = (await browser.get(f"/forms/{form.id}")).text
    csv_file = await browser.get(f"/forms/{form.id}/submissions.csv")

    assert "No submissions yet." in html
    assert "<svg" in html
    assert '<rect class="bar"' not in html
    assert _rows(csv_file) == [HEADER]


async def test_the_csv_has_a_header_and_one_row_per_submission_in_the_order_they_changed(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    now = utcnow().replace(microsecond=0)
    oldest = await create_submission(
        session,
        form,
        submitted_at=now - timedelta(hours=2),
        answers={"name": "Ada", "email": "ada@example.com", "age": 36, "colors": "red"},
    )
    newest = await create_submission(
        session, form, submitted_at=now, answers={"name": "Grace, Hopper", "colors": "blue"}
    )
    middle = await create_submission(
        session, form, submitted_at=now - timedelta(hours=1), answers={"name": "Émilie"}
    )
    await session.commit()
    browser = await signed_in(owner)

    response = await browser.get(f"/forms/{form.id}/submissions.csv")
    rows = _rows(response)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert re.fullmatch(
        rf'attachment; filename="{form.slug}-submissions-\d{{4}}-\d{{2}}-\d{{2}}\.csv"',
        response.headers["content-disposition"],
    )
    # The change feed's order (the API's export shares this code): as they
    # were written, whatever time each claims.
    assert rows == [
        HEADER,
        [
            oldest.id,
            isoformat_z(now - timedelta(hours=2)),
            "1",
            "Ada",
            "ada@example.com",
            "36",
            "red",
        ],
        [newest.id, isoformat_z(now), "1", "Grace, Hopper", "", "", "blue"],
        [middle.id, isoformat_z(now - timedelta(hours=1)), "1", "Émilie", "", "", ""],
    ]
    assert response.headers["x-change-seq"] == "3"


async def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_quoted(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    dangerous = [
        '=HYPERLINK("http://evil.example","x")',
        "+1+1",
        "-2+3",
        "@SUM(A1)",
        "\t=1",
        "  =1+1",  # spaces a spreadsheet trims
        "\u00a0=1+1",  # a non-breaking space
        "\u200b=1+1",  # a zero-width space
        "\ufeff@SUM(A1)",  # a byte order mark
        "\uff1d1+1",  # a full-width equals sign
        "\u3000\uff0b1",  # an ideographic space, then a full-width plus
    ]
    for value in dangerous:
        await create_submission(session, form, answers={"name": value, "colors": "a=b"})
    await session.commit()
    browser = await signed_in(owner)

    rows = _rows(await browser.get(f"/forms/{form.id}/submissions.csv"))

    names = sorted(row[HEADER.index("name")] for row in rows[1:])
    assert names == sorted("'" + value for value in dangerous)
    assert {row[HEADER.index("colors")] for row in rows[1:]} == {"a=b"}  # only a leading one


@pytest.mark.parametrize("count", [9, 10], ids=["chunk multiple", "partial last chunk"])
async def test_a_csv_longer_than_one_chunk_has_every_submission_exactly_once(
    session: AsyncSession, signed_in: SignedIn, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.setattr(export, "CHUNK", 3)
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    now = utcnow()
    times = [now - timedelta(seconds=n // 2) for n in range(count)]
    ids = [(await create_submission(session, form, submitted_at=at)).id for at in times]
    await session.commit()
    browser = await signed_in(owner)

    rows = _rows(await browser.get(f"/forms/{form.id}/submissions.csv"))
    exported = [row[0] for row in rows[1:]]

    assert rows[0] == HEADER
    assert exported == ids  # each once, in the order they were written


async def test_the_csv_lists_only_the_forms_own_submissions(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    other_form = await create_form(session, organization)
    mine = await create_submission(session, form)
    await create_submission(session, other_form)
    await session.commit()
    browser: Browser = await signed_in(owner)

    rows = _rows(await browser.get(f"/forms/{form.id}/submissions.csv"))

    assert [row[0] for row in rows[1:]] == [mine.id]


async def test_the_csv_has_the_columns_of_every_version_of_the_form(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    _, secret = await create_key(
        session,
        organization,
        user=owner,
        scopes=["forms:write", "submissions:read", "submissions:write"],
    )
    form = await create_form(session, organization)
    first = await create_submission(
        session,
        form,
        submitted_at=utcnow() - timedelta(hours=1),
        answers={"name": "Ada", "email": "ada@example.com", "colors": "red"},
    )
    await session.commit()
    blocks = [
        {"type": "short_text", "key": "name", "title": "Name"},
        {"type": "short_text", "key": "city", "title": "City"},
    ]
    assert (await api.patch(f"/v1/forms/{form.id}", secret, json={"blocks": blocks})).is_success
    created = await api.post(
        f"/v1/forms/{form.id}/submissions", secret, json={"answers": {"name": "Bo", "city": "Oslo"}}
    )
    assert created.status_code == 201
    browser = await signed_in(owner)

    downloaded = await browser.get(f"/forms/{form.id}/submissions.csv")
    rows = _rows(downloaded)

    assert rows[0] == [
        *export.FIXED_COLUMNS,
        "name",
        "city",  # the current version's questions, in order
        "email",
        "age",
        "colors",  # then those only older versions asked
    ]
    assert [row[0] for row in rows[1:]] == [first.id, created.json()["id"]]
    assert rows[1][2:] == ["1", "Ada", "", "ada@example.com", "", "red"]
    assert rows[2][2:] == ["2", "Bo", "Oslo", "", "", ""]
    # The API's export is the same file, made by the same code.
    exported = await api.get(
        f"/v1/forms/{form.id}/submissions/export", secret, params={"format": "csv"}
    )
    assert exported.content == downloaded.content


async def test_answers_and_titles_are_shown_as_text_never_as_markup(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization, title="<b>Bold</b> survey")
    await create_submission(session, form, answers={"name": "<script>alert(1)</script>"})
    await session.commit()
    browser = await signed_in(owner)

    listing = (await browser.get("/forms")).text
    page = (await browser.get(f"/forms/{form.id}")).text

    assert "<b>Bold</b>" not in listing
    assert "&lt;b&gt;Bold&lt;/b&gt; survey" in listing
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


async def test_the_form_page_lists_the_twenty_newest_submissions(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    form = await create_form(session, organization)
    now = utcnow()
    for n in range(21):
        await create_submission(
            session, form, submitted_at=now - timedelta(minutes=n), answers={"name": f"R{n:02}"}
        )
    await session.commit()
    browser = await signed_in(owner)

    html = (await browser.get(f"/forms/{form.id}")).text

    assert "<strong>21</strong> responses" in html
    assert ">R00</td>" in html
    assert ">R19</td>" in html
    assert ">R20</td>" not in html  # the oldest is only in the CSV
