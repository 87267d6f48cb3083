"""Posts refused as spam on the hosted page: nothing of them stored, sent to
the feed or to webhooks, and counted per day and reason for the form's
admins, over the API; another organization sees nothing of them."""

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import shift, utcnow
from formsapi.models import Event, SpamRefusal, Submission, WebhookDelivery
from formsapi.spam import repository as spam_repository
from formsapi.tenancy import unscoped
from tests.conftest import Api
from tests.support.factories import EVERY_SCOPE, create_form, create_key, create_org
from tests.support.honeypot import honeypot_in
from tests.support.settled import events_settled

BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name", "required": True}]


async def _form(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form = await create_form(session, org, title="Contact", blocks=BLOCKS)
    await session.commit()
    return form.id, secret


async def _bot(api: Api, form_id: str, filled: str = "x") -> httpx.Response:
    """A bot's post of the form's page, its honeypot filled in (or left empty: a person's)."""
    honeypot = honeypot_in((await api.get(f"/f/{form_id}")).text)
    name = "Bot" if filled else "Ada"
    return await api.post(f"/f/{form_id}", data={"name": name, honeypot: filled})


async def _rows(session: AsyncSession, model: type, *where: Any) -> int:
    """Rows of `model` in every organization: none may be there at all."""
    statement = select(func.count()).select_from(model).where(*where)
    counted = unscoped(statement, "the test counts every row")
    return int((await session.execute(counted)).scalar_one())


async def test_a_bot_filling_the_honeypot_is_shown_success_and_nothing_is_kept(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)

    posted = await _bot(api, form_id, "http://spam.example")

    # What a person sees after sending: the bot learns nothing to adapt to.
    assert posted.status_code == 303
    assert posted.headers["location"] == f"/f/{form_id}/thanks"
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    assert (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"] == []
    changes = await api.get(f"/v1/forms/{form_id}/submissions/changes", secret)
    assert changes.json()["data"] == []
    await events_settled(api.settings.database_url.get_secret_value())
    events = (await api.get("/v1/events", secret)).json()["data"]
    assert [e["type"] for e in events if e["type"].startswith("submission.")] == []
    refusals = await api.get(f"/v1/forms/{form_id}/refusals", secret)
    assert refusals.status_code == 200
    today = utcnow().date().isoformat()
    assert refusals.json() == {"data": [{"day": today, "reason": "honeypot", "count": 1}]}
    # No event means no webhook delivery: none is even queued.
    assert await _rows(session, Submission) == 0
    assert await _rows(session, Event, Event.type.like("submission.%")) == 0
    assert await _rows(session, WebhookDelivery) == 0


async def test_a_person_s_post_beside_it_is_taken_and_not_counted(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)

    await _bot(api, form_id)
    person = await _bot(api, form_id, filled="")

    assert person.status_code == 303
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1
    counted = (await api.get(f"/v1/forms/{form_id}/refusals", secret)).json()["data"]
    assert [(c["reason"], c["count"]) for c in counted] == [("honeypot", 1)]


async def test_refused_posts_cost_no_write_each_and_are_all_counted(
    api: Api, session: AsyncSession
) -> None:
    """A flood of refused posts is held in the serving process and written
    with its next flush (or before the refusals are read), not one write
    a post."""
    form_id, secret = await _form(session)
    honeypot = honeypot_in((await api.get(f"/f/{form_id}")).text)
    for _ in range(40):  # 30 to the honeypot, then 10 past the address's limit
        await api.post(f"/f/{form_id}", data={"name": "Bot", honeypot: "x"})

    written = await _rows(session, SpamRefusal)
    await session.commit()  # its read done: SQLite's writers may go on
    counted = (await api.get(f"/v1/forms/{form_id}/refusals", secret)).json()["data"]

    assert written == 0
    assert {c["reason"]: c["count"] for c in counted} == {"honeypot": 30, "rate-limited-ip": 10}


async def test_a_refusal_held_for_a_form_deleted_since_holds_up_no_other(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=EVERY_SCOPE)
    gone_id = (await create_form(session, org, blocks=BLOCKS)).id
    kept_id = (await create_form(session, org, blocks=BLOCKS)).id
    await session.commit()
    await _bot(api, gone_id)
    await _bot(api, kept_id)

    assert (await api.delete(f"/v1/forms/{gone_id}", secret)).status_code == 204
    counted = (await api.get(f"/v1/forms/{kept_id}/refusals", secret)).json()["data"]

    assert [(c["reason"], c["count"]) for c in counted] == [("honeypot", 1)]
    assert await _rows(session, SpamRefusal) == 1


async def test_counts_are_kept_per_day_and_reason_newest_first(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    form_id = (await create_form(session, org, blocks=BLOCKS)).id
    await session.commit()
    with shift(timedelta(days=-1)):
        await _bot(api, form_id)
    for _ in range(3):
        await _bot(api, form_id)
    await spam_repository.add(session, [((org.id, form_id, utcnow().date(), "rate-limited-ip"), 1)])
    await session.commit()

    counted = (await api.get(f"/v1/forms/{form_id}/refusals", secret)).json()["data"]
    recent = (await api.get(f"/v1/forms/{form_id}/refusals?days=1", secret)).json()["data"]

    today = utcnow().date()
    yesterday = (today - timedelta(days=1)).isoformat()
    assert counted == [
        {"day": today.isoformat(), "reason": "honeypot", "count": 3},
        {"day": today.isoformat(), "reason": "rate-limited-ip", "count": 1},
        {"day": yesterday, "reason": "honeypot", "count": 1},
    ]
    assert recent == counted[:2]


async def test_another_organization_s_refusals_answer_as_a_missing_form(
    api: Api, session: AsyncSession
) -> None:
    form_id, _ = await _form(session)
    other = await create_org(session)
    _, other_secret = await create_key(session, other)
    await session.commit()
    await _bot(api, form_id)

    theirs = await api.get(f"/v1/forms/{form_id}/refusals", other_secret)
    missing = await api.get("/v1/forms/frm_01jd2x8k4m5n6p7q8r9s0t1v2w/refusals", other_secret)

    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["type"] == missing.json()["type"]
    assert theirs.json()["title"] == missing.json()["title"]


@pytest.mark.parametrize("days", ["0", "367", "x"])
async def test_a_bad_number_of_days_is_a_problem(
    api: Api, session: AsyncSession, days: str
) -> None:
    form_id, secret = await _form(session)

    answer = await api.get(f"/v1/forms/{form_id}/refusals?days={days}", secret)

    assert answer.status_code in (400, 422)
    assert answer.headers["content-type"] == "application/problem+json"


async def test_refusals_need_the_forms_read_scope(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=["submissions:read"])
    form = await create_form(session, org, blocks=BLOCKS)
    await session.commit()

    answer = await api.get(f"/v1/forms/{form.id}/refusals", secret)

    assert answer.status_code == 403
