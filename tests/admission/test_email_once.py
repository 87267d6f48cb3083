"""One response per email address: the API's posts and the hosted page's
alike, decided under the form's lock, so exact however many posts race;
only a keyed hash of each address is kept."""

import asyncio
import hashlib

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.app import create_app, release
from formsapi.config import Settings
from tests.conftest import Api, apps_sharing
from tests.support.factories import create_form, create_key, create_org

SECRET_KEY = "o" * 40
SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
BLOCKS = [
    {"type": "short_text", "key": "name", "title": "Your name"},
    {"type": "email", "key": "mail", "title": "Your email"},
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, secret_key=SECRET_KEY)


async def _form(session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, title="Vote", blocks=BLOCKS)
    await session.commit()
    return form.id, secret


async def _by_email(api: Api, form_id: str, secret: str) -> httpx.Response:
    return await api.patch(
        f"/v1/forms/{form_id}",
        secret,
        json={"oneResponse": {"by": "email", "question": "mail"}},
    )


async def _post(api: Api, form_id: str, secret: str, mail: str) -> httpx.Response:
    return await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"mail": mail}}
    )


async def test_an_address_submits_once_through_the_api_and_the_page(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    changed = await _by_email(api, form_id, secret)
    assert changed.status_code == 200
    assert changed.json()["oneResponse"] == {"by": "email", "question": "mail"}

    first = await _post(api, form_id, secret, "Ada@Example.org")
    again = await _post(api, form_id, secret, "ada@example.ORG")
    page = await api.post(f"/f/{form_id}", data={"mail": "ADA@example.org"})
    other = await api.post(f"/f/{form_id}", data={"mail": "grace@example.org"})

    assert first.status_code == 201
    assert again.status_code == 409
    assert again.json()["type"].endswith("already-answered")
    assert page.status_code == 409
    assert "taken already" in page.text
    assert other.status_code == 303
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 2


async def test_only_a_keyed_hash_of_the_address_is_kept(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    assert (await _post(api, form_id, secret, "ada@example.org")).status_code == 201

    rows = (await session.execute(text("SELECT kind, digest FROM respondent_marks"))).all()
    assert len(rows) == 1
    kind, digest = rows[0]
    assert kind == "email"
    assert len(digest) == 32
    assert b"ada" not in bytes(digest)
    assert bytes(digest) != hashlib.sha256(b"ada@example.org").digest()


async def test_an_address_racing_itself_is_taken_exactly_once(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)

    answers = await asyncio.gather(
        *(
            _post(api, form_id, secret, "Ada@example.org" if i % 2 else "ada@EXAMPLE.org")
            for i in range(20)
        ),
        *(_post(api, form_id, secret, f"p{i}@example.org") for i in range(10)),
    )

    codes = [a.status_code for a in answers]
    assert codes[:20].count(201) == 1
    assert codes[:20].count(409) == 19
    assert codes[20:] == [201] * 10
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 11


async def test_a_post_without_the_address_is_refused_and_nothing_is_stored(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)

    missing = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada"}}
    )
    page = await api.post(f"/f/{form_id}", data={"name": "Ada"})

    assert missing.status_code == 422
    assert missing.json()["errors"][0]["pointer"] == "/answers/mail"
    assert page.status_code == 422
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_the_rule_names_an_email_question_of_the_form(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)

    wrong = await api.patch(
        f"/v1/forms/{form_id}",
        secret,
        json={"oneResponse": {"by": "email", "question": "name"}},
    )
    without = await api.patch(f"/v1/forms/{form_id}", secret, json={"oneResponse": {"by": "email"}})
    stray = await api.patch(
        f"/v1/forms/{form_id}", secret, json={"oneResponse": {"by": "cookie", "hours": 3}}
    )
    await _by_email(api, form_id, secret)
    dropped = await api.patch(
        f"/v1/forms/{form_id}",
        secret,
        json={"blocks": [{"type": "short_text", "key": "name", "title": "Your name"}]},
    )

    assert wrong.status_code == 422
    assert wrong.json()["errors"][0]["pointer"] == "/oneResponse/question"
    assert without.status_code == 422
    assert stray.status_code == 422
    assert dropped.status_code == 422  # its email question cannot go while the rule names it


async def test_taking_the_rule_away_takes_answers_again(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    await _post(api, form_id, secret, "ada@example.org")

    off = await api.patch(f"/v1/forms/{form_id}", secret, json={"oneResponse": None})

    assert off.json()["oneResponse"] is None
    assert (await _post(api, form_id, secret, "ada@example.org")).status_code == 201


async def test_another_organization_s_marks_are_its_own(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    other_id, other_secret = await _form(session)
    await _by_email(api, form_id, secret)
    await _by_email(api, other_id, other_secret)

    assert (await _post(api, form_id, secret, "ada@example.org")).status_code == 201
    assert (await _post(api, other_id, other_secret, "ada@example.org")).status_code == 201
    # Another organization's key sees the form as missing, and changes nothing.
    foreign = await api.patch(f"/v1/forms/{form_id}", other_secret, json={"oneResponse": None})
    assert foreign.status_code == 404


async def test_a_server_without_a_secret_key_refuses_keyed_rules(
    database_url: str, session: AsyncSession
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite keeps a key file beside its database: it always has a key")
    form_id, secret = await _form(session)
    app = create_app(Settings(database_url=database_url, redis_url=None))
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        keyed = await client.patch(
            f"/v1/forms/{form_id}",
            headers=headers,
            json={"oneResponse": {"by": "email", "question": "mail"}},
        )
        locked = await client.patch(
            f"/v1/forms/{form_id}", headers=headers, json={"password": "1234"}
        )
        invited = await client.patch(
            f"/v1/forms/{form_id}", headers=headers, json={"oneResponse": {"by": "invitation"}}
        )
    await release(app)

    assert keyed.status_code == 409
    assert "FORMSAPI_SECRET_KEY" in keyed.json()["detail"]
    assert locked.status_code == 409
    assert invited.status_code == 200


async def test_a_change_of_who_may_answer_is_a_form_updated_event(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=[*SCOPES, "events:read"])
    form = await create_form(session, org, title="Vote", blocks=BLOCKS)
    await session.commit()

    await _by_email(api, form.id, secret)
    await api.patch(f"/v1/forms/{form.id}", secret, json={"password": "2468"})
    events = await api.get(f"/v1/events?types=form.updated&formId={form.id}", secret)

    data = [event["data"] for event in events.json()["data"]]
    assert [d["oneResponse"] for d in data] == [{"by": "email", "question": "mail"}] * 2
    assert [d["passwordRequired"] for d in data] == [False, True]
    assert "2468" not in events.text


async def test_a_server_whose_key_was_taken_away_refuses_posts_clearly(
    api: Api, session: AsyncSession, database_url: str
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite keeps a key file beside its database: it always has a key")
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    app = create_app(Settings(database_url=database_url, redis_url=None))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        page = await client.post(f"/f/{form_id}", data={"mail": "ada@example.org"})
        posted = await client.post(
            f"/v1/forms/{form_id}/submissions",
            headers={"Authorization": f"Bearer {secret}"},
            json={"answers": {"mail": "ada@example.org"}},
        )
    await release(app)

    assert page.status_code == 503
    assert "cannot take answers now" in page.text
    assert posted.status_code == 409
    assert posted.json()["type"].endswith("secret-key-needed")
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0


async def test_two_processes_on_one_database_take_an_address_once(
    api: Api, session: AsyncSession, database_url: str
) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    shared = Settings(database_url=database_url, redis_url=None, secret_key=SECRET_KEY)
    auth = {"Authorization": f"Bearer {secret}"}

    async with apps_sharing(shared) as (first, second):
        answers = await asyncio.gather(
            *(
                (first if i % 2 else second).post(
                    f"/v1/forms/{form_id}/submissions",
                    headers=auth,
                    json={"answers": {"mail": "ada@example.org"}},
                )
                for i in range(12)
            )
        )

    assert sorted(a.status_code for a in answers) == [201] + [409] * 11
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_a_form_with_pages_says_an_address_answered_on_its_own_page(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    paged = [
        *BLOCKS,
        {"type": "page_break"},
        {"type": "short_text", "key": "city", "title": "City"},
    ]
    await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": paged})
    await _by_email(api, form_id, secret)
    assert (await _post(api, form_id, secret, "ada@example.org")).status_code == 201

    taken = await api.post(f"/f/{form_id}", data={"_page": "0", "mail": "ADA@example.org"})
    fresh = await api.post(f"/f/{form_id}", data={"_page": "0", "mail": "bob@example.org"})

    assert taken.status_code == 422
    assert "A response from this email address was taken already." in taken.text
    assert 'name="city"' not in taken.text  # still on the first page
    assert fresh.status_code == 200
    assert 'name="city"' in fresh.text


async def test_the_page_marks_the_email_question_required(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(session)
    before = await api.get(f"/f/{form_id}")
    await _by_email(api, form_id, secret)
    after = await api.get(f"/f/{form_id}")

    marked = '<span class="hp">(required)</span>'
    assert before.text.count(marked) == 0
    assert after.text.count(marked) == 1


async def test_idempotency_keys_replay_the_taken_post_and_refuse_the_repeat(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    path = f"/v1/forms/{form_id}/submissions"
    body = {"answers": {"mail": "ada@example.org"}}

    first = await api.post(path, secret, json=body, headers={"Idempotency-Key": "k-1"})
    repeat = await api.post(path, secret, json=body, headers={"Idempotency-Key": "k-2"})
    retried = await api.post(path, secret, json=body, headers={"Idempotency-Key": "k-2"})
    replayed = await api.post(path, secret, json=body, headers={"Idempotency-Key": "k-1"})

    assert first.status_code == 201
    assert (repeat.status_code, retried.status_code) == (409, 409)
    assert replayed.status_code == 201
    assert replayed.json()["id"] == first.json()["id"]
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_a_limit_and_one_response_per_address_hold_together_under_racing_posts(
    api: Api, session: AsyncSession
) -> None:
    """Both gates under the form's lock (limits and who may answer, merged
    in one intake): of 30 posts from 10 addresses, three each, exactly the
    limit's 4 are taken, no two from one address, and the form closes."""
    form_id, secret = await _form(session)
    await _by_email(api, form_id, secret)
    await api.patch(f"/v1/forms/{form_id}", secret, json={"maxSubmissions": 4})
    mails = [f"voter{n % 10}@example.org" for n in range(30)]

    answered = await asyncio.gather(*(_post(api, form_id, secret, mail) for mail in mails))

    taken = [mail for mail, r in zip(mails, answered, strict=True) if r.status_code == 201]
    refused = {r.json()["type"].rsplit("/", 1)[-1] for r in answered if r.status_code != 201}
    assert len(taken) == 4
    assert len(set(taken)) == 4
    assert refused <= {"already-answered", "form-closed"}
    form = (await api.get(f"/v1/forms/{form_id}", secret)).json()
    assert (form["responseCount"], form["status"]) == (4, "closed")
