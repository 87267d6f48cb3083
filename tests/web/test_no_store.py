"""No page of the settings area may be cached: any of them may carry a secret."""

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Role
from tests.support.factories import create_form, create_key, create_org, create_submission
from tests.web.conftest import PASSWORD, BrowserFactory, SignedIn, add_member, invitation_link


def _not_no_store(responses: dict[str, httpx.Response]) -> dict[str, str | None]:
    """The responses without `Cache-Control: no-store`, and what they said instead."""
    return {
        name: response.headers.get("cache-control")
        for name, response in responses.items()
        if response.headers.get("cache-control") != "no-store"
    }


async def test_every_signed_in_page_says_no_store(
    session: AsyncSession, signed_in: SignedIn
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    editor = await add_member(session, organization, Role.editor)
    key_id, _ = await create_key(session, organization, user=owner)
    form = await create_form(session, organization)
    await create_submission(session, form)
    await session.commit()
    browser = await signed_in(owner)
    pages = [
        "/",
        "/forms",
        f"/forms/{form.id}",
        f"/forms/{form.id}/submissions.csv",
        "/forms/frm_missing",
        "/settings/keys",
        f"/settings/keys/{key_id}/revoke",
        "/settings/members",
        f"/settings/members/{editor.id}/remove",
        "/settings/account",
    ]

    responses = {path: await browser.get(path) for path in pages}
    responses["new key, secret shown"] = await browser.submit(
        "/settings/keys", {"name": "k", "scopes": ["forms:read"]}
    )
    responses["post answered 303"] = await browser.post(
        "/settings/keys", {"name": "k2", "scopes": ["forms:read"]}
    )
    responses["invitation link shown"] = await browser.submit(
        "/settings/members", {"email": "new@example.com", "role": "viewer"}
    )
    responses["refused as forged, 403"] = await browser.post("/settings/keys", csrf="wrong")

    assert {path: r.status_code for path, r in responses.items()} == {
        "/": 303,
        "/forms": 200,
        f"/forms/{form.id}": 200,
        f"/forms/{form.id}/submissions.csv": 200,
        "/forms/frm_missing": 404,
        "/settings/keys": 200,
        f"/settings/keys/{key_id}/revoke": 200,
        "/settings/members": 200,
        f"/settings/members/{editor.id}/remove": 200,
        "/settings/account": 200,
        "new key, secret shown": 200,
        "post answered 303": 303,
        "invitation link shown": 200,
        "refused as forged, 403": 403,
    }
    assert _not_no_store(responses) == {}


async def test_every_page_before_sign_in_says_no_store(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    inviter = await signed_in(owner)
    link = invitation_link(
        (
            await inviter.submit("/settings/members", {"email": "n@example.com", "role": "viewer"})
        ).text
    )
    assert link is not None
    anonymous = browsers()

    responses = {
        "sign-in form": await anonymous.get("/sign-in"),
        "sign-in redirect": await anonymous.get("/settings/keys"),
        "invitation": await anonymous.get(link.removeprefix("http://testserver")),
        "bad invitation": await anonymous.get("/invitations/nonsense"),
        "wrong password": await anonymous.sign_in_attempt(owner.email, "wrong password"),
        "signed in, 303": await anonymous.sign_in_attempt(owner.email, PASSWORD),
    }
    for _ in range(5):
        await anonymous.sign_in_attempt("someone@example.com", "wrong password")
    responses["throttled"] = await anonymous.sign_in_attempt("someone@example.com", "x")

    assert responses["throttled"].status_code == 429
    assert _not_no_store(responses) == {}
