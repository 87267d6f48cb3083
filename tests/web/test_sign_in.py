"""Signing in and out, the sign-in throttle, and the password change."""

import asyncio
import re
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db.session import create_sessionmaker
from formsapi.kit.time import utcnow
from formsapi.models import Role, WebSession
from formsapi.user import service as user_service
from tests.support.factories import create_org, create_user
from tests.web.conftest import (
    CSRF_COOKIE,
    PASSWORD,
    SESSION_COOKIE,
    Browser,
    BrowserFactory,
    add_member,
    csrf_field,
    hidden_field,
)

NEW_PASSWORD = "a much longer new password"
THROTTLED = "Too many failed sign-in attempts"


def _error(page: httpx.Response) -> str:
    match = re.search(r'<p class="error" role="alert">([^<]*)</p>', page.text)
    assert match, page.text
    return match.group(1)


def _set_cookie(response: httpx.Response, name: str) -> str:
    [header] = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")]
    return header


async def _reset_link(session: AsyncSession, email: str) -> str:
    """The path of a fresh password reset link for `email`, as the CLI makes one."""
    started = await user_service.start_reset(session, email)
    assert started is not None
    await session.commit()
    return f"/reset-password/{started[1]}"


async def _member(session: AsyncSession, email: str | None = None) -> str:
    organization = await create_org(session)
    user = await add_member(session, organization, Role.owner, await create_user(session, email))
    await session.commit()
    return user.email


async def test_a_wrong_password_and_an_unknown_email_answer_identically(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)

    wrong_password = await browser.sign_in_attempt(email, "not the password")
    unknown_email = await browser.sign_in_attempt("nobody@example.com", PASSWORD)

    assert wrong_password.status_code == unknown_email.status_code == 400
    assert _error(wrong_password) == "Email or password is incorrect."
    assert wrong_password.text == unknown_email.text  # nothing tells who has an account
    assert browser.session_cookie is None


async def test_signing_in_sets_an_httponly_lax_session_cookie_and_goes_to_next(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)

    response = await browser.sign_in_attempt(email, next="/settings/keys")

    assert response.status_code == 303
    assert response.headers["location"] == "/settings/keys"
    cookie = _set_cookie(response, SESSION_COOKIE).lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "path=/" in cookie
    assert (await browser.get("/settings/keys")).status_code == 200


@pytest.mark.parametrize(
    "next_path", ["//evil.com", "https://evil.com", "/\\evil.com", "javascript:alert(1)", ""]
)
async def test_sign_in_never_redirects_off_site(
    browser: Browser, session: AsyncSession, next_path: str
) -> None:
    email = await _member(session)

    response = await browser.sign_in_attempt(email, next=next_path)

    assert response.status_code == 303
    assert response.headers["location"] == "/forms"


async def test_a_page_that_needs_a_session_sends_to_sign_in_and_back(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)

    redirected = await browser.get("/settings/members")
    sign_in_page = await browser.get(redirected.headers["location"])
    signed_in = await browser.client.post(
        "/sign-in",
        data={
            "email": email,
            "password": PASSWORD,
            "csrf_token": csrf_field(sign_in_page.text),
            "next": hidden_field(sign_in_page.text, "next"),
        },
    )

    assert redirected.status_code == 303
    assert redirected.headers["location"] == "/sign-in?next=/settings/members"
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == "/settings/members"


@pytest.mark.parametrize(
    "forgery",
    ["no cookie and no field", "field without cookie", "cookie and field differ", "other origin"],
)
async def test_sign_in_without_the_double_submit_token_is_refused(
    browsers: BrowserFactory, session: AsyncSession, forgery: str
) -> None:
    email = await _member(session)
    browser = browsers()
    token = csrf_field((await browser.get("/sign-in")).text)
    data = {"email": email, "password": PASSWORD, "next": "/forms"}
    headers = {}
    if forgery == "no cookie and no field":
        browser.client.cookies.clear()
    elif forgery == "field without cookie":
        browser.client.cookies.clear()
        data["csrf_token"] = token
    elif forgery == "cookie and field differ":
        data["csrf_token"] = token[::-1]
    else:
        data["csrf_token"] = token
        headers["Origin"] = "https://evil.example"

    response = await browser.client.post("/sign-in", data=data, headers=headers)

    assert response.status_code == 403
    assert "This page had expired" in response.text
    assert browser.session_cookie is None


async def test_the_sign_in_form_sets_the_double_submit_cookie_it_checks(
    browser: Browser,
) -> None:
    page = await browser.get("/sign-in")

    assert csrf_field(page.text) == browser.client.cookies[CSRF_COOKIE]


@pytest.mark.parametrize("has_account", [True, False], ids=["account", "no account"])
async def test_after_five_failures_for_an_email_the_sixth_attempt_waits(
    browser: Browser, session: AsyncSession, has_account: bool
) -> None:
    email = await _member(session) if has_account else "nobody@example.com"

    failures = [
        (await browser.sign_in_attempt(email, "wrong password")).status_code for _ in range(5)
    ]
    sixth = await browser.sign_in_attempt(email, PASSWORD)  # even the right password

    assert failures == [400] * 5
    assert sixth.status_code == 429
    assert _error(sixth).startswith(f"{THROTTLED}. Wait 15 minutes")
    assert 0 < int(sixth.headers["retry-after"]) <= 15 * 60
    assert browser.session_cookie is None


async def test_the_throttle_is_per_email(browser: Browser, session: AsyncSession) -> None:
    email = await _member(session)
    for _ in range(5):
        await browser.sign_in_attempt("someone.else@example.com", "wrong password")

    response = await browser.sign_in_attempt(email, PASSWORD)

    assert response.status_code == 303


async def test_signing_in_clears_the_emails_failures(
    browser: Browser, browsers: BrowserFactory, session: AsyncSession
) -> None:
    email = await _member(session)
    for _ in range(4):
        await browser.sign_in_attempt(email, "wrong password")
    assert (await browsers().sign_in_attempt(email, PASSWORD)).status_code == 303

    again = [(await browser.sign_in_attempt(email, "wrong password")).status_code for _ in range(4)]
    last = await browser.sign_in_attempt(email, PASSWORD)

    assert again == [400] * 4
    assert last.status_code == 303


async def test_signing_out_ends_the_session_on_the_server(
    browsers: BrowserFactory, session: AsyncSession
) -> None:
    email = await _member(session)
    browser = await browsers().sign_in(email)
    cookie = browser.session_cookie
    assert cookie is not None
    replayed_before = await browsers({SESSION_COOKIE: cookie}).get("/forms")

    signed_out = await browser.post("/sign-out")
    replayed_after = await browsers({SESSION_COOKIE: cookie}).get("/forms")

    assert replayed_before.status_code == 200
    assert signed_out.status_code == 303
    assert signed_out.headers["location"] == "/sign-in?signed_out=1"
    assert browser.session_cookie is None  # the browser was told to forget it
    assert "You are signed out." in (await browser.get("/sign-in?signed_out=1")).text
    assert replayed_after.status_code == 303  # and the server forgot it too
    assert replayed_after.headers["location"] == "/sign-in?next=/forms"


async def test_changing_the_password_signs_out_every_other_session(
    browsers: BrowserFactory, session: AsyncSession
) -> None:
    email = await _member(session)
    here = await browsers().sign_in(email)
    elsewhere = await browsers().sign_in(email)

    page = await here.submit(
        "/settings/account/password",
        {
            "current_password": PASSWORD,
            "new_password": NEW_PASSWORD,
            "confirm_password": NEW_PASSWORD,
        },
    )

    assert "Password changed. Every other session has been signed out." in page.text
    assert (await here.get("/forms")).status_code == 200
    assert (await elsewhere.get("/forms")).status_code == 303
    assert (await browsers().sign_in_attempt(email, PASSWORD)).status_code == 400
    assert (await browsers().sign_in_attempt(email, NEW_PASSWORD)).status_code == 303


@pytest.mark.parametrize(
    ("current", "new", "confirm", "message"),
    [
        ("wrong password!", NEW_PASSWORD, NEW_PASSWORD, "The current password is incorrect."),
        (PASSWORD, NEW_PASSWORD, NEW_PASSWORD + "x", "The new passwords do not match."),
        (PASSWORD, "short", "short", "The password must have at least 10 characters."),
    ],
    ids=["wrong current password", "confirmation differs", "too short"],
)
async def test_a_refused_password_change_changes_nothing(
    browsers: BrowserFactory,
    session: AsyncSession,
    current: str,
    new: str,
    confirm: str,
    message: str,
) -> None:
    email = await _member(session)
    here = await browsers().sign_in(email)
    elsewhere = await browsers().sign_in(email)

    page = await here.submit(
        "/settings/account/password",
        {"current_password": current, "new_password": new, "confirm_password": confirm},
    )

    assert _error(page) == message
    assert (await elsewhere.get("/forms")).status_code == 200
    assert (await browsers().sign_in_attempt(email, PASSWORD)).status_code == 303


async def test_next_keeps_its_query_string_through_sign_in(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)

    redirected = await browser.get("/forms?page=2")
    sign_in_page = await browser.get(redirected.headers["location"])
    signed_in = await browser.client.post(
        "/sign-in",
        data={
            "email": email,
            "password": PASSWORD,
            "csrf_token": csrf_field(sign_in_page.text),
            "next": hidden_field(sign_in_page.text, "next"),
        },
    )

    assert signed_in.headers["location"] == "/forms?page=2"


async def test_guessing_the_current_password_is_throttled_like_signing_in(
    browsers: BrowserFactory, session: AsyncSession
) -> None:
    email = await _member(session)
    browser = await browsers().sign_in(email)
    wrong = {
        "current_password": "wrong password",
        "new_password": NEW_PASSWORD,
        "confirm_password": NEW_PASSWORD,
    }
    for _ in range(5):
        await browser.submit("/settings/account/password", wrong)

    page = await browser.submit(
        "/settings/account/password", {**wrong, "current_password": PASSWORD}
    )

    assert _error(page).startswith(THROTTLED)
    assert (await browsers().sign_in_attempt(email, NEW_PASSWORD)).status_code == 429


async def test_a_burst_of_concurrent_guesses_gets_no_more_than_five_checked(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)
    token = csrf_field((await browser.get("/sign-in")).text)

    async def guess(n: int) -> int:
        response = await browser.client.post(
            "/sign-in",
            data={"email": email, "password": f"guess {n}", "csrf_token": token, "next": "/"},
        )
        return response.status_code

    codes = await asyncio.gather(*(guess(n) for n in range(15)))

    assert Counter(codes) == {400: 5, 429: 10}  # five guesses checked, then wait


async def test_twenty_failures_from_one_address_make_every_email_wait(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)
    for n in range(20):
        await browser.sign_in_attempt(f"guess{n}@example.com", "wrong password")

    response = await browser.sign_in_attempt(email, PASSWORD)

    assert response.status_code == 429
    assert _error(response).startswith(THROTTLED)


async def test_a_session_past_its_lifetime_is_signed_out(
    browsers: BrowserFactory, engine: AsyncEngine, session: AsyncSession
) -> None:
    email = await _member(session)
    browser = await browsers().sign_in(email)
    async with create_sessionmaker(engine)() as other, other.begin():
        await other.execute(update(WebSession).values(expires_at=utcnow() - timedelta(seconds=1)))

    response = await browser.get("/forms")

    assert response.status_code == 303
    assert response.headers["location"] == "/sign-in?next=/forms"


async def test_without_mail_forgot_password_says_how_to_get_a_reset_link(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)
    form = await browser.get("/forgot-password")

    token = csrf_field((await browser.get("/sign-in")).text)
    posted = await browser.client.post(
        "/forgot-password", data={"email": email, "csrf_token": token}
    )

    assert form.status_code == 200
    assert "formsapi user reset-link --email" in form.text
    assert 'name="email"' not in form.text
    assert posted.status_code == 404


async def test_an_address_padded_past_its_length_is_not_the_account(
    browser: Browser, session: AsyncSession
) -> None:
    email = await _member(session)

    padded = await browser.sign_in_attempt(email + " " * 400 + "0", PASSWORD)

    assert padded.status_code == 400  # another address, so another throttle count: no account


async def test_guessing_a_new_password_through_a_link_is_throttled_like_signing_in(
    session: AsyncSession, browsers: BrowserFactory
) -> None:
    """Each post through a valid reset link hashes a password: it takes a
    sign-in throttle slot first, and a link that opens nothing hashes nothing."""
    organization = await create_org(session)
    user = await add_member(session, organization, Role.owner)
    await session.commit()
    link = await _reset_link(session, user.email)
    browser = browsers()
    token = csrf_field((await browser.get("/sign-in")).text)

    answers = [
        await browser.client.post(
            link, data={"new_password": "x", "confirm_password": "x", "csrf_token": token}
        )
        for _ in range(6)
    ]
    garbage = await browser.client.post(
        "/reset-password/garbage",
        data={"new_password": NEW_PASSWORD, "confirm_password": NEW_PASSWORD, "csrf_token": token},
    )

    assert [a.status_code for a in answers] == [400] * 5 + [429]
    assert garbage.status_code == 404
