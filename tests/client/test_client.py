"""The sync client against a real server on each engine: every resource, the
iterators that page, the change feed to its end, the export, and problems
raised as typed exceptions."""

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from formsapi_client import (
    BadRequest,
    Client,
    Conflict,
    CursorExpired,
    NotFound,
    PreconditionFailed,
    Unauthorized,
    ValidationFailed,
)
from formsapi_client.models import (
    Block,
    Heading,
    MultipleChoice,
    Option,
    PageBreak,
    ShortText,
    SubmissionDeleted,
    SubmissionDetail,
)
from tests.client.conftest import ANSWERS, Live, published_form
from tests.support.settled import events_settled


def test_a_form_reads_back_with_typed_blocks_and_its_schema(client: Client) -> None:
    blocks: list[Block | dict[str, Any]] = [
        Heading(text="About you"),
        ShortText(key="name", title="Name", required=True, max_length=80),
        {"type": "rating", "key": "score", "title": "Score", "scale": 10},
        MultipleChoice(
            key="colors",
            title="Colors",
            options=[Option(value="red", label="Red"), Option(value="blue", label="Blue")],
        ),
        PageBreak(),
    ]
    created = client.forms.create("Typed blocks", blocks, slug="typed-blocks")

    form = client.forms.get(created.id)
    assert form == created
    assert (form.title, form.slug, form.status, form.version) == (
        "Typed blocks",
        "typed-blocks",
        "draft",
        1,
    )
    assert [type(block).__name__ for block in form.blocks] == [
        "Heading",
        "ShortText",
        "Rating",
        "MultipleChoice",
        "PageBreak",
    ]
    assert form.blocks[1] == ShortText(key="name", title="Name", required=True, max_length=80)
    assert form.answers_schema["required"] == ["name"]
    assert form.answers_schema["properties"]["score"]["maximum"] == 10


def test_a_form_moves_through_its_versions_and_is_deleted(client: Client) -> None:
    form = published_form(client, "Versions")
    assert form.status == "published"
    client.submissions.create(form.id, ANSWERS)

    renamed = client.forms.update(form.id, title="Renamed", blocks=[form.blocks[1]])
    assert (renamed.title, renamed.version, len(renamed.blocks)) == ("Renamed", 2, 1)
    assert len(client.forms.get(form.id, version=1).blocks) == len(form.blocks)

    with pytest.raises(Conflict) as refused:
        client.forms.delete(form.id)
    assert refused.value.status == 409
    client.forms.delete(form.id, delete_submissions=True)
    with pytest.raises(NotFound):
        client.forms.get(form.id)


def test_the_iterators_page_through_every_form_and_submission(client: Client) -> None:
    form = published_form(client, "Paging")
    created = {client.submissions.create(form.id, ANSWERS).id for _ in range(7)}

    page = client.submissions.list(form.id, limit=3)
    assert (len(page.data), page.pagination.total) == (3, 7)
    assert {s.id for s in client.submissions.iter(form.id, limit=3)} == created
    assert len(list(client.submissions.iter(form.id, limit=3))) == 7
    later = datetime.now(UTC) + timedelta(days=1)
    assert list(client.submissions.iter(form.id, since=later)) == []

    forms = list(client.forms.iter(limit=2))
    assert len(forms) == client.forms.list().pagination.total
    assert len({f.id for f in forms}) == len(forms)
    assert form.id in {f.id for f in forms}


def test_a_dashboard_reads_a_typed_summary_with_filters(client: Client) -> None:
    form = published_form(client, "Summary")
    for colors, age in (("red", 30), ("red,blue", 40), ("blue", None)):
        answers = {**ANSWERS, "colors": colors} | ({"age": age} if age else {})
        client.submissions.create(form.id, answers)

    summary = client.forms.summary(form.id)
    reds = client.forms.summary(
        form.id, answer="colors:red", since=datetime(2000, 1, 1, tzinfo=UTC)
    )

    assert summary.submissions == 3
    chosen = next(q for q in summary.questions if q.key == "colors")
    assert [(o.value, o.count) for o in chosen.options or []] == [("red", 2), ("blue", 2)]
    ages = next(q for q in reds.questions if q.key == "age")
    assert (reds.submissions, ages.answered, ages.mean, ages.min, ages.max) == (2, 2, 35, 30, 40)
    assert reds.filters.answer == "colors:red"
    series = client.forms.timeseries(form.id, interval="hour", tz="Asia/Kolkata", question="age")
    assert series.buckets[-1].submissions == 3  # within the last hour
    assert (series.buckets[-1].answered, series.buckets[-1].mean) == (2, 35)
    assert series.buckets[-1].start.endswith("+05:30")
    # Sent over the API, none of them is part of the hosted page's funnel.
    funnel = client.forms.funnel(form.id, since=datetime(2000, 1, 1, tzinfo=UTC))
    assert (funnel.views, funnel.starts, funnel.completions) == (0, 0, 0)
    assert funnel.completion_rate is None
    assert [page.page for page in funnel.pages] == [1, 2]
    assert funnel.hours is not None
    assert funnel.hours.since == "2000-01-01T00:00:00.000Z"


def test_the_change_feed_is_read_to_its_end_page_by_page(client: Client) -> None:
    form = published_form(client, "Feed")
    ids = [client.submissions.create(form.id, ANSWERS).id for _ in range(5)]
    edited = client.submissions.edit(form.id, ids[0], {"name": "Grace"}, if_match=1)
    assert (edited.version, edited.answers["name"]) == (2, "Grace")
    client.submissions.delete(form.id, ids[1])

    pages = list(client.submissions.iter_changes(form.id, limit=2))
    assert [page.has_more for page in pages] == [True, True, False]
    copy: dict[str, SubmissionDetail] = {}
    for page in pages:
        for item in page.data:
            if isinstance(item, SubmissionDeleted):
                copy.pop(item.id, None)
            else:
                copy[item.id] = item
    assert set(copy) == set(ids) - {ids[1]}
    assert copy[ids[0]].answers["name"] == "Grace"
    assert pages[-1].next == client.forms.get(form.id).change_seq

    after = client.submissions.changes(form.id, after=pages[-1].next)
    assert (after.data, after.has_more, after.next) == ([], False, pages[-1].next)
    tombstones = client.submissions.changes(form.id, after=pages[0].next).data
    assert any(isinstance(item, SubmissionDeleted) for item in tombstones)


def test_the_export_streams_every_live_row_and_where_the_feed_goes_on(client: Client) -> None:
    form = published_form(client, "Export")
    ids = [client.submissions.create(form.id, {**ANSWERS, "name": f"n{i}"}).id for i in range(6)]
    client.submissions.delete(form.id, ids[2])

    with client.submissions.export(form.id) as export:
        rows = list(export)
    assert [row.id for row in rows] == [i for i in ids if i != ids[2]]
    assert all(isinstance(row, SubmissionDetail) for row in rows)
    assert export.count == 5
    assert export.change_seq == client.forms.get(form.id).change_seq

    # Nothing is missed from there: the feed after it is empty until a change.
    client.submissions.create(form.id, ANSWERS)
    assert len(client.submissions.changes(form.id, after=export.change_seq).data) == 1


def test_problems_are_raised_as_typed_exceptions(client: Client, live: Live) -> None:
    with pytest.raises(NotFound) as missing:
        client.forms.get("frm_nope")
    assert (missing.value.status, missing.value.type) == (404, "/problems/not-found")
    assert missing.value.detail == "No form with id 'frm_nope'."

    with pytest.raises(BadRequest) as bad:
        client.forms.list(limit=101)
    assert bad.value.type == "/problems/invalid-parameters"
    assert [(p.name, p.in_) for p in bad.value.invalid_params] == [("limit", "query")]

    form = published_form(client, "Problems")
    with pytest.raises(ValidationFailed) as invalid:
        client.submissions.create(form.id, {"colors": "green", "shoe": 42})
    assert invalid.value.status == 422
    assert {e.pointer for e in invalid.value.errors} == {
        "/answers/name",
        "/answers/colors",
        "/answers/shoe",
    }

    submission = client.submissions.create(form.id, ANSWERS)
    client.submissions.edit(form.id, submission.id, {"name": "Grace"})
    with pytest.raises(PreconditionFailed) as stale:
        client.submissions.edit(form.id, submission.id, {"name": "Ada"}, if_match=1)
    assert stale.value.headers["etag"] == '"2"'

    with pytest.raises(CursorExpired) as expired:
        client.submissions.changes(form.id, after=10**9)
    assert expired.value.status == 410

    draft = client.forms.create("Draft")
    with pytest.raises(Conflict) as closed:
        client.submissions.create(draft.id, {})
    assert closed.value.extensions["formStatus"] == "draft"

    with (
        Client(live.base_url, "fapi_not_a_key") as stranger,
        pytest.raises(Unauthorized) as refused,
    ):
        stranger.forms.list()
    assert refused.value.headers["www-authenticate"].startswith("Bearer")


def test_events_are_iterated_and_narrowed(client: Client, live: Live) -> None:
    form = published_form(client, "Events")
    first = client.submissions.create(form.id, ANSWERS)
    client.submissions.delete(form.id, first.id)
    asyncio.run(events_settled(live.database_url))

    mine = list(client.events.iter(form_id=form.id, limit=2))
    assert [e.type for e in mine] == [
        "form.created",
        "form.status_changed",
        "submission.created",
        "submission.deleted",
    ]
    assert mine[2].data is not None
    assert mine[2].data["id"] == first.id
    deletes = client.events.list(types=["submission.deleted"], form_id=form.id)
    assert [(e.data or {}).get("id") for e in deletes.data] == [first.id]
    # An event's id is where to resume.
    assert [e.id for e in client.events.iter(after=mine[1].id, form_id=form.id)] == [
        e.id for e in mine[2:]
    ]


def test_the_client_reads_its_key_and_address_from_the_environment(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMSAPI_URL", live.base_url + "/v1/")
    monkeypatch.setenv("FORMSAPI_API_KEY", live.secret)
    with Client() as client:
        assert client.forms.list(limit=1).pagination.limit == 1
    monkeypatch.delenv("FORMSAPI_API_KEY")
    with pytest.raises(ValueError, match="FORMSAPI_API_KEY"):
        Client()


@pytest.mark.parametrize(
    "url",
    [
        "127.0.0.1:8000",
        "ftp://127.0.0.1",
        "http://[::1",
        "http://ada:hunter2@h",
        "http://ada:hunter2@[::1",  # not even a URL, and still no password shown
        "http://h?x=1",
        "http://h/?token=hunter2",
    ],
)
def test_a_server_url_that_is_not_one_is_refused_when_the_client_is_made(url: str) -> None:
    with pytest.raises(ValueError, match=r"URL") as refused:
        Client(url, "fapi_key")
    assert "hunter2" not in str(refused.value)


def test_one_respondent_is_exported_erased_and_audited_through_the_client(
    client: Client,
) -> None:
    email = f"ada-{datetime.now(UTC).timestamp()}@example.com"  # this test's own person
    blocks: list[Any] = [
        ShortText(type="short_text", key="name", title="Name"),
        {"type": "email", "key": "email", "title": "Email"},
    ]
    form = client.forms.create("Respondents", blocks, retention_days=30)
    assert form.retention_days == 30
    form = client.forms.update(form.id, status="published", retention_days=365)
    assert form.retention_days == 365
    made = client.submissions.create(form.id, {"name": "Ada", "email": email.upper()})

    found = client.respondents.export(email)
    erased = client.respondents.erase(email)
    again = client.respondents.export(email)
    entries = client.respondents.audit_entries().data

    assert [s.id for s in found.submissions] == [made.id]
    assert found.submissions[0].answers["name"] == "Ada"
    assert found.complete is True
    assert (erased.submissions, erased.partials, erased.more) == (1, 0, False)
    assert again.submissions == []
    assert [e.action for e in entries[:3]] == [
        "respondent.exported",
        "respondent.erased",
        "respondent.exported",
    ]
    assert entries[0].actor.kind == "key"
    with pytest.raises(BadRequest):
        client.respondents.export()


def test_a_form_s_limit_closes_it_and_its_problem_is_typed(client: Client) -> None:
    form = published_form(client, "Limited")
    closes = datetime(2099, 3, 8, 17, 30, tzinfo=UTC)
    limited = client.forms.update(
        form.id, limits={"maxSubmissions": 1, "closesAt": closes, "messageAfterClosing": "Full."}
    )
    assert (limited.max_submissions, limited.closes_at, limited.quotas) == (1, closes, [])
    client.submissions.create(form.id, ANSWERS)

    with pytest.raises(Conflict) as full:
        client.submissions.create(form.id, ANSWERS)
    assert full.value.extensions["reason"] == "maxSubmissions"
    assert client.forms.get(form.id).status == "closed"
    reopened = client.forms.update(form.id, status="published", limits={"maxSubmissions": 2})
    assert reopened.status == "published"


def test_a_forms_settings_are_taken_away_by_name(client: Client) -> None:
    form = published_form(client, "Cleared")
    closes = datetime(2099, 3, 8, 17, 30, tzinfo=UTC)
    bounded = client.forms.update(
        form.id, retention_days=30, limits={"closesAt": closes, "maxSubmissions": 5}
    )
    assert (bounded.retention_days, bounded.closes_at, bounded.max_submissions) == (30, closes, 5)

    cleared = client.forms.update(form.id, clear=["retentionDays", "closesAt", "maxSubmissions"])

    assert cleared.retention_days is None
    assert (cleared.closes_at, cleared.max_submissions) == (None, None)
    assert cleared.status == "published"
    with pytest.raises(ValueError, match="cannot clear"):
        client.forms.update(form.id, clear=["title"])
    with pytest.raises(ValueError, match="both given and cleared"):
        client.forms.update(form.id, retention_days=7, clear=["retentionDays"])
