"""The settings area as a person uses it: Debian's Chromium (its headless
shell) driven by Playwright against a real `formsapi serve --demo` process,
the API called over real HTTP.

Every page visited is saved as a screenshot under test-artifacts/screenshots/
(laptop and phone widths), to be looked at: a page that works but looks broken
is not done.
"""

import asyncio
import contextlib
import csv
import functools
import http.server
import io
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError
from standardwebhooks import Webhook

from tests.conftest import service_unavailable
from tests.e2e.windows import LAPTOP, ON_PHONE, PHONE, Windows
from tests.support.receiver import Answer, Received, Receiver
from tests.support.servers import TLS, Server, clean_env, cli, in_thread, start_server, stop_servers

# Debian's headless shell (Chromium's old headless mode, a build of its own)
# renders the same pages, scripts and screenshots as the whole browser for
# much less CPU (bench/RESULTS.md).
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
DEMO_LOGIN = re.compile(r"email: (\S+)\s+password: (\S+)")


@dataclass(frozen=True)
class Site:
    server: Server
    directory: Path
    email: str
    password: str
    other_org: str  # Globex, where the demo owner is an admin

    @property
    def url(self) -> str:
        return self.server.base_url

    def cli(self, *args: str, stdin: str = "") -> str:
        return cli(
            self.directory, f"sqlite:///{self.directory / 'formsapi.db'}", *args, stdin=stdin
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """What the README's serve command gives a new user, plus a second organization."""
    directory = tmp_path_factory.mktemp("e2e")
    server = start_server(directory, clean_env(), "server", ("--demo",))
    try:
        server.wait_until_healthy()
        match = DEMO_LOGIN.search(server.stderr)
        assert match, server.stderr
        email, password = match.groups()
        database = f"sqlite:///{directory / 'formsapi.db'}"
        other = cli(directory, database, "org", "create", "--name", "Globex")
        cli(
            directory,
            database,
            "member",
            "add",
            "--org",
            other,
            "--email",
            email,
            "--role",
            "admin",
        )
        cli(directory, database, "demo", "--org", other, "--forms", "2", "--submissions", "30")
        yield Site(server, directory, email, password, other)
    finally:
        stop_servers([server])


@contextlib.contextmanager
def chromium(*old_screenshots: str) -> Iterator[Browser]:
    """Debian's Chromium, after the screenshots matching `old_screenshots`
    (globs in SCREENSHOTS) from an earlier run are gone: each file of
    browser tests clears its own, running beside the others."""
    if not CHROMIUM.exists():
        service_unavailable(
            f"Chromium is not installed at {CHROMIUM} (apt-get install chromium-headless-shell)"
        )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for pattern in old_screenshots:
        for old in SCREENSHOTS.glob(pattern):
            old.unlink()
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # 46-49 are the uploads' and 6x the builder's (their own files).
    with chromium("[0-35]*.png", "4[0-5]*.png") as launched:
        yield launched


# Chromium's compositor now and then refuses a screenshot ("Unable to capture
# screenshot", puppeteer#5341), once seen twice in a row: asked again after
# the page's next frame, up to this many times in all.
_SCREENSHOT_TRIES = 4


def capture(page: Page, path: Path) -> None:
    """A full-page screenshot, one image pixel to a CSS pixel: a phone's page,
    laid out at twice the density, is saved at its width in CSS pixels (a third
    of the time of a full-density image)."""
    for tries_left in reversed(range(_SCREENSHOT_TRIES)):
        try:
            page.screenshot(path=path, full_page=True, scale="css")
            return
        except PlaywrightError as error:
            if "Unable to capture screenshot" not in error.message or not tries_left:
                raise
        page.evaluate("() => new Promise(requestAnimationFrame)")


def shoot(page: Page, name: str) -> None:
    capture(page, SCREENSHOTS / f"{name}.png")


def on_phone(windows: Windows, page: Page) -> Page:
    """The same page at a phone's width, in the same session."""
    phone = windows.open(**ON_PHONE)
    phone.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
    phone.goto(page.url)
    return phone


def shoot_phone(windows: Windows, page: Page, name: str) -> None:
    phone = on_phone(windows, page)
    shoot(phone, f"{name}-phone")
    assert_tables_fit(phone)
    windows.close(phone)


def assert_tables_fit(page: Page) -> None:
    """No table or code of the page runs past its box (where it would scroll
    sideways, its last columns hidden, a phone's cells or lines cut off), but
    those made to scroll: a region the keyboard can scroll (the charts' tables)."""
    wider = page.locator(".table-wrap:not([role=region]), pre").evaluate_all(
        "wraps => wraps.filter(w => w.scrollWidth > w.clientWidth)"
        ".map(w => w.innerText.slice(0, 80))"
    )
    assert not wider, wider


def shoot_at_both_widths(windows: Windows, page: Page, name: str) -> None:
    """The page at a laptop's width, and at a phone's in the same session."""
    shoot(page, name)
    shoot_phone(windows, page, name)


def sign_in(page: Page, site: Site, email: str, password: str) -> None:
    page.goto(f"{site.url}/forms")
    expect(page).to_have_url(re.compile(r"/sign-in"))
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}/forms")


def generate_key(page: Page, site: Site, name: str, *scopes: str) -> str:
    page.goto(f"{site.url}/settings/keys")
    page.get_by_label("Name").fill(name)
    for scope in scopes:
        page.get_by_role("checkbox", name=re.compile(re.escape(scope))).check()
    page.get_by_role("button", name="Generate key").click()
    secret = page.get_by_label("Secret key").input_value()
    assert secret.startswith("fapi_")
    return secret


def api(site: Site, method: str, path: str, secret: str, **kwargs: object) -> httpx.Response:
    return httpx.request(
        method,
        f"{site.url}{path}",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
        verify=TLS,
        **kwargs,  # type: ignore[arg-type]
    )


def publish(site: Site, secret: str, form: Mapping[str, Any]) -> str:
    """A form created and published over the API, as a builder would: its id."""
    created = api(site, "POST", "/v1/forms", secret, json=form)
    assert created.status_code == 201, created.text
    form_id: str = created.json()["id"]
    published = api(site, "PATCH", f"/v1/forms/{form_id}", secret, json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id


# A receiver's error page with terminal colours, a bell, NEL (a C1 control) and
# a right-to-left override: the delivery page shows each as an escape.
CONTROLS_BODY = (
    b"ok\x1b[31mred\x07done\xc2\x85\r\n<b>&\ttab\xe2\x80\xaeevil\r\n"
    b'{"error": "\x1b[1mupstream timed out\x1b[0m", "retry": true, '
    b'"trace": "at handler (app.js:12:7)"}'
)


async def answer_with_controls(_: Received) -> Answer:
    return 500, {"content-type": "text/plain"}, CONTROLS_BODY


NEW_FORM = {
    "title": "Made by a browser key",
    "blocks": [{"type": "short_text", "key": "q", "title": "Q"}],
}


def test_sign_in_switch_organization_and_make_a_key_that_works_once_shown(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    page.goto(f"{site.url}/sign-in")
    shoot_at_both_widths(windows, page, "01-sign-in")

    page.get_by_label("Email").fill(site.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Email or password is incorrect.")

    sign_in(page, site, site.email, site.password)
    expect(page.get_by_role("heading", name="Forms")).to_be_visible()
    expect(page.get_by_text("Customer satisfaction survey")).to_be_visible()
    shoot_at_both_widths(windows, page, "02-forms")  # on a phone, each id under its form's title

    # Switch to Globex: its forms, not Acme's.
    page.get_by_label("Organization").select_option(label="Globex (admin)")
    page.get_by_role("button", name="Switch").click()
    expect(page.get_by_text("2 forms in Globex")).to_be_visible()
    shoot(page, "03-forms-other-organization")
    globex_secret = generate_key(page, site, "globex sync")
    globex_forms = api(site, "GET", "/v1/forms", globex_secret).json()
    assert globex_forms["pagination"]["total"] == 2

    page.get_by_label("Organization").select_option(label="Acme (demo) (owner)")
    page.get_by_role("button", name="Switch").click()

    # A key with write access, shown once with its warning.
    secret = generate_key(page, site, "browser key", "forms:write")
    box = page.locator(".secret-box")
    expect(box).to_contain_text("it will not be shown again")
    expect(box).to_contain_text("Never put it in client-side code")
    expect(box.get_by_role("button", name="Copy")).to_be_visible()
    shoot(page, "04-key-shown-once")
    shoot_phone(windows, page, "04-keys")

    page.reload()
    expect(page.locator(".secret-box")).to_have_count(0)
    assert secret not in page.content()
    page.go_back()
    assert secret not in page.content()
    page.goto(f"{site.url}/settings/keys")
    row = page.get_by_role("row", name=re.compile("browser key"))
    expect(row).to_contain_text(secret[:11])
    expect(row).to_contain_text(site.email)
    expect(row).to_contain_text("active")
    shoot(page, "05-keys-after-reload")

    # The key works over real HTTP, in its own organization only.
    listed = api(site, "GET", "/v1/forms", secret)
    assert listed.status_code == 200, listed.text
    assert listed.json()["pagination"]["total"] == 8
    created = api(site, "POST", "/v1/forms", secret, json=NEW_FORM)
    assert created.status_code == 201, created.text

    # Revoke, confirmed on its own page: refused at once.
    row.get_by_role("link", name="Revoke browser key").click()
    expect(page.get_by_role("heading", name="Revoke “browser key”?")).to_be_visible()
    shoot(page, "06-revoke-confirm")
    page.get_by_role("button", name="Revoke key").click()
    expect(page.locator(".notice")).to_contain_text("is revoked")
    expect(page.get_by_role("row", name=re.compile("browser key"))).to_contain_text("revoked")
    shoot(page, "07-key-revoked")
    assert api(site, "GET", "/v1/forms", secret).status_code == 401

    page.goto(f"{site.url}/settings/account")
    shoot(page, "08-account")


def test_a_demoted_member_key_loses_write_access_and_a_removed_one_stops(
    windows: Windows, site: Site
) -> None:
    owner = windows.open(viewport=LAPTOP)
    sign_in(owner, site, site.email, site.password)

    owner.goto(f"{site.url}/settings/members")
    owner.get_by_label("Email").fill("editor@example.com")
    owner.get_by_label("Role", exact=True).select_option("editor")
    owner.get_by_role("button", name="Invite").click()
    link = owner.get_by_label("Invitation link").input_value()
    assert "/invitations/" in link
    shoot(owner, "09-members-invitation")
    shoot_phone(windows, owner, "09-members")  # "(you)" beside the email, not cut off

    # The new member follows the link in their own browser.
    member = windows.open(viewport=LAPTOP)
    member.goto(link)
    expect(member.get_by_role("heading", name="Join Acme (demo)")).to_be_visible()
    shoot(member, "10-invitation")
    member.get_by_label(re.compile(r"^Password \(at least")).fill("a new long password")
    member.get_by_label("Password again").fill("a new long password")
    member.get_by_role("button", name="Create account and join").click()
    expect(member).to_have_url(f"{site.url}/forms")
    expect(member.get_by_role("status")).to_contain_text("Welcome to Acme (demo).")

    secret = generate_key(member, site, "editor key", "forms:write")
    assert api(site, "POST", "/v1/forms", secret, json=NEW_FORM).status_code == 201

    # The owner demotes them: the same key can read, not write.
    owner.reload()
    row = owner.get_by_role("row", name=re.compile("editor@example.com"))
    row.get_by_label("Role of editor@example.com").select_option("viewer")
    row.get_by_role("button", name="Save").click()
    expect(owner.locator(".notice")).to_contain_text("Role changed to viewer")
    refused = api(site, "POST", "/v1/forms", secret, json=NEW_FORM)
    assert refused.status_code == 403, refused.text
    assert refused.json()["requiredScope"] == "forms:write"
    assert api(site, "GET", "/v1/forms", secret).status_code == 200

    member.goto(f"{site.url}/settings/keys")
    expect(member.get_by_role("checkbox", name=re.compile("forms:write"))).to_be_disabled()
    shoot(member, "11-keys-as-viewer")

    # Removed: every key of theirs stops.
    owner.get_by_role("link", name="Remove editor@example.com").click()
    owner.get_by_role("button", name="Remove member").click()
    expect(owner.locator(".notice")).to_contain_text("was removed")
    assert api(site, "GET", "/v1/forms", secret).status_code == 401
    member.goto(f"{site.url}/forms")
    expect(member.get_by_role("heading", name="You are not in an organization")).to_be_visible()


def test_a_form_page_shows_its_chart_and_downloads_every_submission_as_csv(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP, accept_downloads=True)
    sign_in(page, site, site.email, site.password)
    page.get_by_role("link", name="Customer satisfaction survey").click()
    expect(page.get_by_role("heading", name="Submissions per day, last 90 days")).to_be_visible()
    expect(page.locator("svg[role=img] rect.bar").first).to_be_visible()
    expect(page.get_by_role("heading", name="Most recent submissions")).to_be_visible()
    assert_tables_fit(page)  # at a laptop's width, long questions as column heads included
    responses = int(page.locator(".stats strong").first.inner_text().replace(",", ""))
    shoot_at_both_widths(windows, page, "12-form")
    # On a phone the chart of its own shape: as tall as a thumb, labels readable.
    phone = on_phone(windows, page)
    chart = phone.locator("#chart-heading ~ svg:visible")
    chart_box = chart.bounding_box()
    assert chart_box is not None
    assert chart_box["height"] > 150, chart_box
    scale = chart_box["width"] / float(chart.evaluate("svg => svg.viewBox.baseVal.width"))
    assert chart.locator("text").first.evaluate("label => label.getBBox().height") * scale >= 10
    windows.close(phone)

    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download CSV").click()
    download = download_info.value
    assert download.suggested_filename.endswith(".csv")
    text = Path(download.path()).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["submission_id", "submitted_at", "form_version"]
    assert "overall" in rows[0]
    assert len(rows) - 1 == responses
    assert len({row[0] for row in rows[1:]}) == responses


def test_an_owner_chooses_who_is_mailed_about_a_forms_responses(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP, bypass_csp=True)  # for axe
    sign_in(page, site, site.email, site.password)
    page.get_by_role("link", name="Customer satisfaction survey").click()
    page.get_by_role("link", name="Notifications").click()
    expect(page.get_by_role("heading", name="Notifications", exact=True)).to_be_visible()
    page.get_by_label(site.email).select_option("daily")
    page.get_by_role("button", name="Save").click()

    expect(page.get_by_text("Saved: 1 member told.")).to_be_visible()
    expect(page.get_by_label(site.email)).to_have_value("daily")
    expect(page.get_by_text("Mail is off on this server")).to_be_visible()  # the README's serve
    assert axe_violations(page) == []
    shoot_at_both_widths(windows, page, "17-notifications")


@contextlib.contextmanager
def another_site(html: str) -> Iterator[str]:
    """A page served by another origin (another port on loopback): the address."""
    directory = Path(tempfile.mkdtemp(prefix="embedder-"))
    (directory / "index.html").write_text(html)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    with in_thread(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as port:
        yield f"http://127.0.0.1:{port}"


def test_a_form_shows_in_a_frame_only_on_the_sites_its_organization_lists(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    page.get_by_role("link", name="Customer satisfaction survey").click()
    public = page.get_by_role("link", name="Public page").get_attribute("href")
    assert public is not None
    # The partner site pastes the code the form's embed page gives.
    page.get_by_role("link", name="Embed").click()
    snippet = page.get_by_label("Embed code").input_value()
    assert f'src="{site.url}{public}"' in snippet, snippet
    embed = f"<h1>A partner site</h1>{snippet}"

    with another_site(embed) as elsewhere:
        visitor = windows.open(viewport=LAPTOP)
        visitor.goto(elsewhere)
        refused = visitor.frame_locator("iframe").get_by_role(
            "heading", name="Customer satisfaction survey"
        )
        expect(refused).to_have_count(0)
        shoot(visitor, "13-frame-refused")

        page.goto(f"{site.url}/settings/org")
        page.get_by_label(re.compile("^Origins")).fill(elsewhere)
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".notice")).to_contain_text("on 1 site")
        shoot(page, "14-organization")

        visitor.reload()
        shown = visitor.frame_locator("iframe").get_by_role(
            "heading", name="Customer satisfaction survey"
        )
        expect(shown).to_be_visible()
        shoot(visitor, "15-frame-allowed")

        # The form's own list, left empty, overrides the organization's: no site may.
        page.goto(f"{site.url}/forms/{public.removeprefix('/f/')}")
        embedding = page.locator('form[action$="/embedding"]')
        embedding.get_by_label("This form's own list").check()
        embedding.get_by_role("button", name="Save").click()
        expect(page.locator(".notice")).to_contain_text("No site may show this form in a frame")
        shoot(page, "16-form-framing")
        policy = httpx.get(f"{site.url}{public}").headers["content-security-policy"]
        assert policy.endswith("frame-ancestors 'self'"), policy
        embedding.get_by_label("Use the organization's list").check()
        embedding.get_by_role("button", name="Save").click()
        expect(page.locator(".notice")).to_contain_text("follows the organization's list")

        # The embed page shows the form in a frame, as the partner site does.
        page.get_by_role("link", name="Embed").click()
        expect(page.get_by_text(elsewhere)).to_be_visible()
        preview = page.frame_locator(".embed-preview iframe")
        expect(preview.get_by_role("heading", name="Customer satisfaction survey")).to_be_visible()
        shoot_at_both_widths(windows, page, "18-embed")
        audited = windows.open(viewport=LAPTOP, bypass_csp=True)  # for axe
        audited.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
        audited.goto(page.url)
        assert axe_violations(audited) == []


def test_an_owner_adds_a_webhook_endpoint_and_its_test_event_arrives_signed(
    windows: Windows, tmp_path: Path
) -> None:
    # A server of its own: the shared one refuses loopback receivers, as production does.
    server = start_server(
        tmp_path, clean_env(webhook_allow_private_networks="true"), "webhooks", ("--demo",)
    )
    # The receiver runs in an event loop of its own: Playwright's sync API holds this thread.
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    receiver = asyncio.run_coroutine_threadsafe(Receiver().__aenter__(), loop).result(10)
    shots = tmp_path / "screenshots"
    shots.mkdir()

    def shoot_both(page: Page, name: str) -> None:
        """Laptop and phone width, of the page as it is now (a secret shown once included)."""
        capture(page, shots / f"{name}.png")
        page.set_viewport_size(PHONE)
        capture(page, shots / f"{name}-phone.png")
        assert_tables_fit(page)
        page.set_viewport_size(LAPTOP)

    try:
        server.wait_until_healthy()
        login = DEMO_LOGIN.search(server.stderr)
        assert login, server.stderr
        email, password = login.groups()
        site = Site(server, tmp_path, email, password, other_org="")
        page = windows.open(viewport=LAPTOP)
        sign_in(page, site, email, password)

        page.get_by_role("link", name="Webhooks").click()
        expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
        expect(page.get_by_text("No endpoints yet.")).to_be_visible()
        shoot_both(page, "20-webhooks-add")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_label("Description").fill("Order system")
        page.get_by_role("checkbox", name=re.compile("submission.created")).check()
        page.get_by_role("checkbox", name=re.compile("Customer satisfaction survey")).check()
        page.get_by_role("button", name="Add endpoint").click()

        # The secret, shown once, with how to verify what it signs.
        box = page.locator(".secret-box")
        expect(box).to_contain_text("it will not be shown again")
        expect(box).to_contain_text("standardwebhooks")
        expect(box.get_by_role("button", name="Copy")).to_be_visible()
        secret = page.get_by_label("Signing secret", exact=True).input_value()
        assert secret.startswith("whsec_")
        shoot_both(page, "21-webhook-secret-shown-once")

        page.get_by_role("button", name="Send test event").click()
        expect(page.locator(".notice")).to_contain_text("A test event (ping) is on its way")
        assert secret not in page.content()
        # The server's own worker delivers it; the log shows the outcome once written.
        row = page.get_by_role("row", name=re.compile(r"\bping\b"))
        deadline = time.monotonic() + 20
        while "succeeded" not in (row.inner_text() if row.count() else ""):
            assert time.monotonic() < deadline, page.content()
            time.sleep(0.2)
            page.reload()
        expect(row).to_contain_text("HTTP 200")
        [request] = receiver.received
        event = Webhook(secret).verify(request.body, request.headers)
        assert event["type"] == "ping"
        shoot_both(page, "22-webhook-deliveries")

        row.get_by_role("link", name=re.compile("^Attempts of ping")).click()
        expect(page.get_by_role("heading", name="Delivery of ping")).to_be_visible()
        expect(page.get_by_text("Attempt 1")).to_be_visible()
        expect(page.get_by_label("Answer to attempt 1")).to_have_text("ok")
        shoot_both(page, "23-webhook-delivery")

        # Sent again, to a receiver answering control characters: shown as escapes.
        receiver.behaviour = answer_with_controls
        page.get_by_role("button", name="Resend").click()
        expect(page.locator(".notice")).to_contain_text("Sent again")
        answer = page.get_by_label("Answer to attempt 2")
        deadline = time.monotonic() + 20
        while not answer.count():
            assert time.monotonic() < deadline, page.content()
            time.sleep(0.2)
            page.reload()
        expect(answer).to_contain_text("ok\\u001b[31mred\\u0007done\\u0085")
        expect(answer).to_contain_text("<b>&\ttab\\u202eevil")
        shoot_both(page, "23-webhook-delivery-control-characters")

        page.get_by_role("link", name="Webhooks", exact=True).click()
        listed = page.get_by_role("row", name=re.compile("Order system"))
        expect(listed).to_contain_text("enabled")
        expect(listed).to_contain_text("submission.created")
        expect(listed).to_contain_text("Customer satisfaction survey")
        shoot_both(page, "24-webhooks-list")
    finally:
        asyncio.run_coroutine_threadsafe(receiver.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        stop_servers([server])
        saved = Path("/tmp/webhook-shots")  # noqa: S108 - where a person looks at them
        saved.mkdir(exist_ok=True)
        for shot in shots.glob("*.png"):
            shutil.copy(shot, saved / shot.name)
            shutil.copy(shot, SCREENSHOTS / shot.name)


LOGIC_FORM = {
    "title": "Workshop sign-up",
    "blocks": [
        {"type": "heading", "text": "About you"},
        {"type": "short_text", "key": "name", "title": "Your name", "required": True,
         "prefill": True},
        {"type": "single_choice", "key": "plan", "title": "Who is coming?", "required": True,
         "options": [{"value": "personal", "label": "Just me"},
                     {"value": "business", "label": "My team"}]},
        {"type": "page_break", "key": "team"},
        {"type": "number", "key": "size", "title": "How many of your team, {{name}}?",
         "required": True, "min": 2, "max": 50, "integer": True},
        {"type": "page_break", "key": "wrap_up"},
        {"type": "rating", "key": "nps", "title": "How likely are you to recommend us, {{name}}?",
         "scale": 10, "required": True},
        {"type": "long_text", "key": "better", "title": "What would make it a 10?",
         "visibleIf": {"<=": [{"var": "nps"}, 6]}},
    ],
    "hiddenFields": [{"key": "campaign"}],
    "variables": [{"name": "seats", "value": {"if": [{"var": "size"}, {"var": "size"}, 1]}}],
    "logic": [
        {"if": {"==": [{"var": "plan"}, "personal"]},
         "then": [{"jump": "wrap_up", "after": "plan"}]},
    ],
    "endings": [
        {"key": "thanks", "title": "See you there, {{name}}!",
         "text": "We saved {{vars.seats}} seat(s) for you."},
    ],
}  # fmt: skip


def _walk_logic_form(page: Page, url: str, width: str) -> None:
    """A respondent through the logic form: prefilled name, a jump taken
    and undone with Back, an error, recall, and the ending."""
    page.goto(f"{url}?name=Ada&campaign=launch")
    expect(page.get_by_label("Your name")).to_have_value("Ada")
    expect(page.get_by_text("Page 1 of 3")).to_be_visible()
    page.get_by_label("Just me").check()
    page.get_by_role("button", name="Next").click()
    expect(page.get_by_text("Page 2 of 2")).to_be_visible()  # the team page skipped
    expect(page.get_by_text("How likely are you to recommend us, Ada?")).to_be_visible()
    shoot(page, f"25-logic-jump{width}")
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_label("Just me")).to_be_checked()
    page.get_by_label("My team").check()
    page.get_by_role("button", name="Next").click()
    page.get_by_role("button", name="Next").click()  # nothing typed: the page says why
    expect(page.get_by_role("alert")).to_contain_text("How many of your team, Ada?: is required")
    shoot(page, f"26-logic-page-error{width}")
    page.get_by_label("How many of your team, Ada?").fill("4")
    page.get_by_role("button", name="Next").click()
    # With script on, the follow-up shows and hides as the rules say, at once.
    better = page.get_by_label("What would make it a 10?")
    page.get_by_label("3", exact=True).check()
    expect(better).to_be_visible()
    page.get_by_label("9").check()
    expect(better).to_be_hidden()
    shoot(page, f"27-logic-last-page{width}")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="See you there, Ada!")).to_be_visible()
    expect(page.get_by_text("We saved 4 seat(s) for you.")).to_be_visible()
    shoot(page, f"28-logic-ending{width}")


def test_a_form_with_logic_goes_page_by_page_with_recall_and_its_ending(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "logic", "forms:write", "submissions:read")
    form_id = publish(site, secret, LOGIC_FORM)
    url = f"{site.url}/f/{form_id}"

    _walk_logic_form(page, url, "")
    _walk_logic_form(windows.open(**ON_PHONE), url, "-phone")

    listed = api(site, "GET", f"/v1/forms/{form_id}/submissions", secret).json()["data"]
    assert [s["answers"]["campaign"] for s in listed] == ["launch", "launch"]
    assert listed[0]["answers"]["vars.seats"] == 4


TYPES_FORM = {
    "title": "Every kind of question",
    "blocks": [
        {"type": "yes_no", "key": "member", "title": "Are you a member?", "required": True},
        {"type": "nps", "key": "nps", "title": "How likely are you to recommend us?"},
        {"type": "scale", "key": "ease", "title": "How easy was it?", "min": 1, "max": 5,
         "minLabel": "Very hard", "maxLabel": "Very easy"},
        {"type": "dropdown", "key": "country", "title": "Country",
         "options": [{"value": f"c{i}", "label": f"Country {i}"} for i in range(60)]},
        {"type": "ranking", "key": "priorities", "title": "Rank what matters",
         "options": [{"value": "price", "label": "Price"}, {"value": "speed", "label": "Speed"},
                     {"value": "support", "label": "Support"}]},
        {"type": "time", "key": "at", "title": "Best time to call"},
        {"type": "date_time", "key": "when", "title": "Appointment"},
        {"type": "matrix", "key": "service", "title": "Our service",
         "rows": [{"value": "speed", "label": "It was fast"},
                  {"value": "price", "label": "The price was fair"}],
         "columns": [{"value": "no", "label": "Disagree"}, {"value": "meh", "label": "Neutral"},
                     {"value": "yes", "label": "Agree"}]},
        {"type": "single_choice", "key": "source", "title": "Where did you hear of us?",
         "options": [{"value": "friend", "label": "A friend"}], "allowOther": True},
    ],
}  # fmt: skip


def test_every_kind_of_question_is_asked_and_answered_on_the_page(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "types", "forms:write", "submissions:read")
    form_id = publish(site, secret, TYPES_FORM)

    page.goto(f"{site.url}/f/{form_id}")
    page.get_by_label("Yes").check()
    page.locator("label.point", has_text="9").first.click()
    page.get_by_label("Search Country").fill("ntry 4")  # script on: the list narrows
    assert page.locator("#field-country option:not([hidden])").count() == 12  # 4, 40-49, Choose
    page.get_by_label("Country", exact=True).select_option("c42")
    for place, value in enumerate(("support", "price", "speed"), start=1):
        page.get_by_label(f"Rank what matters: place {place}").select_option(value)
    page.get_by_label("Best time to call").fill("09:30")
    page.get_by_label("Appointment").fill("2026-12-01T14:00")
    page.get_by_label("It was fast: Agree").check()
    page.get_by_label("The price was fair: Neutral").check()
    page.get_by_label("Other", exact=True).check()
    page.get_by_label("Other, please specify").fill("A podcast")
    shoot(page, "29-question-types")
    page.set_viewport_size(PHONE)
    shoot(page, "29-question-types-phone")
    page.set_viewport_size(LAPTOP)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()

    [stored] = api(site, "GET", f"/v1/forms/{form_id}/submissions", secret).json()["data"]
    assert stored["answers"] == {
        "member": "yes",
        "nps": 9,
        "country": "c42",
        "priorities": "support,price,speed",
        "at": "09:30",
        "when": "2026-12-01T14:00",
        "service.speed": "yes",
        "service.price": "meh",
        "source": "other",
        "source_other": "A podcast",
    }


AXE = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Page) -> list[dict[str, object]]:
    """axe-core's serious and critical findings on the page as it is now
    (injected past the page's CSP: the page itself runs no script)."""
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        """async () => {
            const run = await axe.run(document);
            return {
                passed: run.passes.length,
                found: run.violations
                    .filter(v => v.impact === "serious" || v.impact === "critical")
                    .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target)})),
            };
        }"""
    )
    assert result["passed"] > 10, result  # axe ran its rules on this page
    found: list[dict[str, object]] = result["found"]
    return found


def test_the_hosted_pages_of_every_kind_pass_axe(windows: Windows, site: Site) -> None:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "axe", "forms:write")
    urls = [f"{site.url}/f/{publish(site, secret, form)}" for form in (TYPES_FORM, LOGIC_FORM)]
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)

    found = {}
    for url in urls:
        checker.goto(url)
        found[url] = axe_violations(checker)
        checker.get_by_role("button", name=re.compile("Next|Send")).click()  # errors shown
        found[f"{url} with errors"] = axe_violations(checker)
    checker.goto(urls[1])  # the form with pages: its link to resume later
    checker.get_by_role("button", name="Save and continue later").click()
    found["saved"] = axe_violations(checker)

    assert found == {name: [] for name in found}


RESUME_FORM = {
    "title": "Grant application",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "page_break", "key": "about"},
        {"type": "short_text", "key": "project", "title": "Project title", "required": True},
        {"type": "long_text", "key": "summary", "title": "Summary", "required": True},
    ],
    "resumeDays": 14,
}


def test_a_respondent_saves_closes_the_browser_and_resumes_on_a_phone(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "resume", "forms:write", "submissions:read")
    form_id = publish(site, secret, RESUME_FORM)
    windows.close(page)

    page = windows.open(viewport=LAPTOP)
    page.goto(f"{site.url}/f/{form_id}")
    page.get_by_label("Your name").fill("Ada")
    page.get_by_role("button", name="Next").click()
    page.get_by_label("Project title").fill("Analytical engine")
    shoot(page, "40-resume-before-saving")
    page.get_by_role("button", name="Save and continue later").click()
    expect(page.get_by_role("heading", name="Your answers are saved")).to_be_visible()
    shoot(page, "41-resume-saved")
    link = page.locator(".resume-link a").inner_text()
    path = link[link.index("/f/") :]
    windows.close(page)  # the browser is gone, and its cookies with it

    page = windows.open(**ON_PHONE)
    page.goto(f"{site.url}{path}")
    expect(page.get_by_text("Page 2 of 2")).to_be_visible()
    expect(page.get_by_label("Project title")).to_have_value("Analytical engine")
    shoot(page, "42-resume-opened-phone")
    page.get_by_label("Summary").fill("A machine that computes.")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    page.goto(f"{site.url}{path}")
    expect(page.get_by_text("These answers were sent already")).to_be_visible()
    shoot(page, "43-resume-used-phone")

    [stored] = api(site, "GET", f"/v1/forms/{form_id}/submissions", secret).json()["data"]
    assert stored["answers"] == {
        "name": "Ada",
        "project": "Analytical engine",
        "summary": "A machine that computes.",
    }


LANGUAGES_FORM = {
    "title": "Workshop",
    "blocks": [
        {"type": "short_text", "key": "name", "title": "Your name", "required": True},
        {"type": "page_break", "key": "more"},
        {"type": "single_choice", "key": "plan", "title": "Who is coming?", "required": True,
         "options": [{"value": "me", "label": "Just me"}, {"value": "team", "label": "My team"}]},
    ],
    "translations": {
        "fr": {"title": "Atelier",
               "blocks": {"name": {"title": "Votre nom"},
                          "plan": {"title": "Qui vient ?",
                                   "options": {"me": "Moi seul", "team": "Mon équipe"}}},
               "messages": {"next": "Suivant", "back": "Retour", "send": "Envoyer",
                            "save": "Enregistrer et finir plus tard",
                            "required": "est obligatoire", "language": "Langue",
                            "page": "Page {number} sur {total}",
                            "fix_one": "Corrigez 1 réponse",
                            "fix_many": "Corrigez {count} réponses"}},
    },
}  # fmt: skip


def test_a_respondent_reads_the_form_in_their_language_and_switches(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    secret = generate_key(page, site, "languages", "forms:write", "submissions:read")
    form_id = publish(site, secret, LANGUAGES_FORM)
    windows.close(page)

    for viewport, suffix in ((LAPTOP, ""), (PHONE, "-phone")):
        page = windows.open(viewport=viewport, locale="fr-FR")
        page.goto(f"{site.url}/f/{form_id}")
        expect(page.get_by_role("heading", name="Atelier")).to_be_visible()
        page.get_by_role("button", name="Suivant").click()
        expect(page.get_by_role("alert")).to_contain_text("Corrigez 1 réponse")
        expect(page.get_by_role("alert")).to_contain_text("Votre nom: est obligatoire")
        expect(page.get_by_text("Page 1 sur 2")).to_be_visible()
        shoot(page, f"44-language-french-error{suffix}")
        page.get_by_label("Votre nom").fill("Ada")
        page.get_by_role("button", name="Suivant").click()
        page.get_by_label("Moi seul").check()
        page.get_by_role("button", name="English").click()
        expect(page.get_by_text("Who is coming?")).to_be_visible()
        expect(page.get_by_label("Just me")).to_be_checked()
        shoot(page, f"45-language-switched{suffix}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("heading", name="Thank you")).to_be_visible()

    listed = api(site, "GET", f"/v1/forms/{form_id}/submissions", secret).json()["data"]
    assert [s["answers"] for s in listed] == [{"name": "Ada", "plan": "me"}] * 2


def test_a_new_form_from_a_template_and_from_pasted_json_in_a_few_clicks(
    windows: Windows, site: Site
) -> None:
    page = windows.open(viewport=LAPTOP)
    sign_in(page, site, site.email, site.password)
    page.get_by_role("link", name="New form").click()
    expect(page.get_by_role("heading", name="New form")).to_be_visible()
    shoot_at_both_widths(windows, page, "50-new-form")

    page.get_by_role("button", name="Use this template: Scored quiz").click()
    expect(page.get_by_role("heading", name=re.compile("Quick quiz"))).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Draft “Quick quiz” created.")
    shoot_at_both_widths(windows, page, "51-new-form-from-template")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download JSON").click()
    exported = json.loads(Path(download.value.path()).read_text())
    assert [variable["name"] for variable in exported["variables"]] == ["score"]
    quiz = page.url

    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("status")).to_contain_text("“Quick quiz” is published.")
    shoot_at_both_widths(windows, page, "53-form-published")
    page.get_by_role("link", name="Public page", exact=True).click()
    page.get_by_label("Your name").fill("Ada")
    page.get_by_role("button", name="Next").click()
    expect(page.get_by_text("Ada, what is the capital of France?")).to_be_visible()
    page.goto(quiz)

    page.goto(f"{site.url}/forms/new")
    broken = {"title": "Broken", "blocks": [{"type": "email", "key": "email"}]}
    page.get_by_label("Paste the JSON").fill(json.dumps(broken))
    page.get_by_role("button", name="Import as a draft").click()
    expect(page.get_by_role("alert").first).to_contain_text("1 problem")
    expect(page.locator("#json-problems")).to_contain_text("Block 1 (“email”), title")
    shoot(page, "52-new-form-json-problems")
    on_phone = windows.open(**ON_PHONE)
    on_phone.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
    on_phone.goto(f"{site.url}/forms/new")
    on_phone.get_by_label("Paste the JSON").fill(json.dumps(broken))
    on_phone.get_by_role("button", name="Import as a draft").click()
    expect(on_phone.locator("#json-problems")).to_be_visible()
    shoot(on_phone, "52-new-form-json-problems-phone")
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed at {AXE} (npm ci --prefix frontend)")
    checker = windows.open(viewport=LAPTOP, bypass_csp=True)
    checker.context.add_cookies(page.context.cookies())  # type: ignore[arg-type]
    checker.goto(page.url)
    assert axe_violations(checker) == []
