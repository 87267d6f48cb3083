"""Single-use invitation links: made through the API (only their SHA-256
kept), each answered once through the hosted page, spent in the
submission's own transaction (two posts with one link: one is taken),
revocable; without a valid link the page takes no answers."""

import asyncio
import hashlib
import re

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org

SCOPES = ["forms:read", "forms:write", "submissions:read", "submissions:write"]
BLOCKS = [{"type": "short_text", "key": "name", "title": "Your name"}]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, redis_url=None, secret_key="i" * 40)


async def _form(api: Api, session: AsyncSession) -> tuple[str, str]:
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=SCOPES)
    form = await create_form(session, org, title="Board vote", blocks=BLOCKS)
    await session.commit()
    changed = await api.patch(
        f"/v1/forms/{form.id}",
        secret,
        json={
            "oneResponse": {"by": "invitation"},
            "hiddenFields": [{"key": "email"}, {"key": "label"}],
        },
    )
    assert changed.status_code == 200
    assert changed.json()["oneResponse"] == {"by": "invitation"}
    return form.id, secret


async def _links(api: Api, form_id: str, secret: str, **body: object) -> list[dict[str, str]]:
    made = await api.post(f"/v1/forms/{form_id}/invitations", secret, json=body)
    assert made.status_code == 201, made.text
    assert made.headers["cache-control"] == "no-store"
    data: list[dict[str, str]] = made.json()["data"]
    return data


def _invite(response: httpx.Response) -> str | None:
    found = re.search(r'name="_invite" value="([^"]+)"', response.text)
    return found[1] if found else None


async def test_a_link_is_answered_once(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)
    [link] = await _links(api, form_id, secret, count=1)
    token = link["token"]
    assert link["url"].endswith(f"/f/{form_id}?invite={token}")
    assert link["status"] == "open"

    shown = await api.get(f"/f/{form_id}?invite={token}")
    sent = await api.post(f"/f/{form_id}", data={"name": "Ada", "_invite": _invite(shown) or ""})
    again = await api.get(f"/f/{form_id}?invite={token}")
    posted_again = await api.post(f"/f/{form_id}", data={"name": "Eve", "_invite": token})

    assert shown.status_code == 200
    assert shown.headers["referrer-policy"] == "no-referrer"  # the address holds the secret
    assert shown.headers["cache-control"] == "no-store"
    assert sent.status_code == 303
    assert again.status_code == 410
    assert "used already" in again.text
    assert posted_again.status_code == 410
    listed = (await api.get(f"/v1/forms/{form_id}/invitations", secret)).json()
    assert [i["status"] for i in listed["data"]] == ["used"]
    assert "token" not in listed["data"][0]
    assert listed["data"][0]["usedAt"] is not None
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 1


async def test_without_a_valid_link_the_page_takes_no_answers(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    unknown = "A" * 43

    bare = await api.get(f"/f/{form_id}")
    garbage = await api.get(f"/f/{form_id}?invite=%3Cscript%3E")
    made_up = await api.get(f"/f/{form_id}?invite={unknown}")
    posted = await api.post(f"/f/{form_id}", data={"name": "Eve"})
    forged = await api.post(f"/f/{form_id}", data={"name": "Eve", "_invite": unknown})

    assert bare.status_code == 403
    assert "invitation links only" in bare.text
    assert garbage.status_code == 403
    assert "<script>" not in garbage.text
    assert made_up.status_code == 404
    assert posted.status_code == 403
    assert forged.status_code == 404
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 0
    # The organization's own key posts through the API without a link.
    api_post = await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada"}}
    )
    assert api_post.status_code == 201


async def test_two_posts_with_one_link_at_once_one_is_taken(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    links = await _links(api, form_id, secret, count=3)

    answers = await asyncio.gather(
        *(
            api.post(f"/f/{form_id}", data={"name": f"P{i}", "_invite": link["token"]})
            for link in links
            for i in range(4)
        )
    )

    for i in range(3):
        codes = sorted(a.status_code for a in answers[i * 4 : i * 4 + 4])
        assert codes[0] == 303
        assert codes[1:] == [409] * 3 or all(code in (409, 410) for code in codes[1:])
    refused = [a for a in answers if a.status_code != 303]
    assert all("used already" in a.text for a in refused)
    assert (await api.get(f"/v1/forms/{form_id}", secret)).json()["responseCount"] == 3


async def test_a_link_s_email_and_label_go_into_hidden_fields(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    [link] = await _links(
        api, form_id, secret, recipients=[{"email": "ada@example.org", "label": "Ada L."}]
    )
    assert (link["email"], link["label"]) == ("ada@example.org", "Ada L.")

    shown = await api.get(f"/f/{form_id}?invite={link['token']}&email=eve@example.org")
    # The page's hidden inputs changed on the way: the link's values win.
    sent = await api.post(
        f"/f/{form_id}",
        data={"name": "Ada", "_invite": link["token"], "email": "eve@example.org", "label": "x"},
    )

    assert 'value="ada@example.org"' in shown.text
    assert "eve@example.org" not in shown.text
    assert sent.status_code == 303
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"name": "Ada", "email": "ada@example.org", "label": "Ada L."}


async def test_a_revoked_link_opens_nothing(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)
    [link, kept] = await _links(api, form_id, secret, count=2)

    revoked = await api.delete(f"/v1/forms/{form_id}/invitations/{link['id']}", secret)
    shown = await api.get(f"/f/{form_id}?invite={link['token']}")
    posted = await api.post(f"/f/{form_id}", data={"name": "Eve", "_invite": link["token"]})
    other = await api.get(f"/f/{form_id}?invite={kept['token']}")
    missing = await api.delete(f"/v1/forms/{form_id}/invitations/inv_nothing", secret)

    assert revoked.status_code == 204
    assert shown.status_code == 410
    assert "no longer valid" in shown.text
    assert posted.status_code == 410
    assert other.status_code == 200
    assert missing.status_code == 404
    listed = (await api.get(f"/v1/forms/{form_id}/invitations", secret)).json()
    assert sorted(i["status"] for i in listed["data"]) == ["open", "revoked"]
    assert listed["pagination"]["total"] == 2


async def test_only_the_token_s_sha256_is_stored(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)
    [link] = await _links(api, form_id, secret, count=1)

    [stored] = (await session.execute(text("SELECT token_hash FROM form_invitations"))).all()

    assert bytes(stored[0]) == hashlib.sha256(link["token"].encode()).digest()


async def test_another_organization_s_links_are_a_missing_form(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    [link] = await _links(api, form_id, secret, count=1)
    other_id, other_secret = await _form(api, session)
    path = f"/v1/forms/{form_id}/invitations"

    made = await api.post(path, other_secret, json={"count": 1})
    listed = await api.get(path, other_secret)
    revoked = await api.delete(f"{path}/{link['id']}", other_secret)
    # A link of one form opens no other.
    elsewhere = await api.get(f"/f/{other_id}?invite={link['token']}")

    assert made.status_code == listed.status_code == revoked.status_code == 404
    assert elsewhere.status_code == 404
    assert (await api.get(f"/f/{form_id}?invite={link['token']}")).status_code == 200


async def test_bad_requests_for_links_are_problems(api: Api, session: AsyncSession) -> None:
    form_id, secret = await _form(api, session)
    path = f"/v1/forms/{form_id}/invitations"

    both = await api.post(path, secret, json={"count": 1, "recipients": [{"label": "x"}]})
    neither = await api.post(path, secret, json={})
    too_many = await api.post(path, secret, json={"count": 10_000})
    long_label = await api.post(path, secret, json={"recipients": [{"label": "x" * 201}]})
    # JSON's true is not 1 (a fuzz run's find: it made a link).
    flag = await api.post(path, secret, json={"recipients": None, "count": True})

    assert [r.status_code for r in (both, neither, too_many, long_label, flag)] == [422] * 5
    assert (await api.get(path, secret)).json()["data"] == []


async def test_a_form_with_pages_carries_the_link_and_its_resume_link_too(
    api: Api, session: AsyncSession
) -> None:
    form_id, secret = await _form(api, session)
    paged = [
        {"type": "short_text", "key": "name", "title": "Your name"},
        {"type": "page_break"},
        {"type": "short_text", "key": "city", "title": "Your city"},
    ]
    await api.patch(f"/v1/forms/{form_id}", secret, json={"blocks": paged})
    [link] = await _links(api, form_id, secret, count=1)
    token = link["token"]

    first = await api.get(f"/f/{form_id}?invite={token}")
    second = await api.post(
        f"/f/{form_id}", data={"_page": "0", "name": "Ada", "_invite": _invite(first) or ""}
    )
    resume = re.search(r'name="_resume" value="([^"]+)"', second.text)
    assert resume is not None
    saved = await api.post(
        f"/f/{form_id}",
        data={
            "_page": "1",
            "name": "Ada",  # carried in the page's hidden inputs
            "_go": "save",
            "_resume": resume[1],
            "_invite": _invite(second) or "",
        },
    )
    url = re.search(r'href="https?://[^"/]*(/f/[^"]+)"', saved.text)
    assert url is not None, saved.text
    resumed = await api.get(url[1].replace("&amp;", "&"))
    sent = await api.post(
        f"/f/{form_id}",
        data={
            "_page": "1",
            "name": "Ada",
            "city": "Paris",
            "_resume": resume[1],
            "_invite": _invite(resumed) or "",
        },
    )

    assert second.status_code == 200
    assert _invite(second) == token
    assert f"?invite={token}" in url[1]
    assert resumed.status_code == 200
    assert _invite(resumed) == token
    assert sent.status_code == 303
    [stored] = (await api.get(f"/v1/forms/{form_id}/submissions", secret)).json()["data"]
    assert stored["answers"] == {"name": "Ada", "city": "Paris"}
    listed = (await api.get(f"/v1/forms/{form_id}/invitations", secret)).json()
    assert listed["data"][0]["status"] == "used"
