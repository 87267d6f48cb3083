"""Who may answer a form, through both clients against a real server on
each engine: a one-response rule and a password set with forms.update,
invitation links made, listed (never their tokens) and revoked."""

import httpx

from formsapi_client import AsyncClient, Client
from formsapi_client.models import OneResponse, Recipient
from tests.client.conftest import Live, published_form


def test_links_are_made_listed_and_revoked_and_a_password_set(client: Client, live: Live) -> None:
    form = published_form(client, "Board vote")
    changed = client.forms.update(
        form.id, one_response=OneResponse(by="invitation"), password="2468"
    )
    made = client.invitations.create(
        form.id, recipients=[Recipient(email="ada@example.org", label="Ada"), Recipient()]
    )
    more = client.invitations.create(form.id, count=2)
    client.invitations.revoke(form.id, made.data[1].id)
    listed = client.invitations.list(form.id, limit=10)

    assert changed.one_response == OneResponse(by="invitation")
    assert changed.password_required is True
    assert [m.email for m in made.data] == ["ada@example.org", None]
    assert all(m.url.endswith(f"?invite={m.token}") for m in made.data + more.data)
    assert listed.pagination.total == 4
    assert sorted(i.status for i in listed.data) == ["open", "open", "open", "revoked"]
    # The page asks for the password before a link's form is shown.
    page = httpx.get(live.base_url + httpx.URL(made.data[0].url).raw_path.decode())
    assert 'name="password"' in page.text


async def test_the_async_client_makes_and_lists_links(live: Live) -> None:
    async with AsyncClient(live.base_url, live.secret) as client:
        form = await client.forms.create("Async vote")
        made = await client.invitations.create(form.id, count=3)
        listed = await client.invitations.list(form.id)
        await client.invitations.revoke(form.id, made.data[0].id)

        assert len(made.data) == 3
        assert {i.id for i in listed.data} == {m.id for m in made.data}
        assert [i.status for i in (await client.invitations.list(form.id)).data].count(
            "revoked"
        ) == 1
