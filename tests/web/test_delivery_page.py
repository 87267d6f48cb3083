"""A receiver's answer on the delivery page: control characters and invisible
format characters show as JSON escapes (\\u001b), never raw, and what is
shown stays HTML-escaped. Deliveries go to a real receiver on loopback, sent
by a worker in this process."""

import re
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.config import Settings
from formsapi.models import Role
from formsapi.web.context import templates, visible
from formsapi.webhook.worker import Worker
from tests.support.factories import create_org, new_worker
from tests.support.receiver import Answer, Received, Receiver
from tests.web.conftest import SignedIn, add_member

PAGE = "/settings/webhooks"
_SECRET = re.compile(r'id="new-secret" type="text" readonly value="[^"]+"')
_DELIVERY = re.compile(r"/deliveries/(whd_[0-9a-z]+)")
# ESC and BEL (a terminal colour and bell), NUL, NEL (U+0085, a C1 control),
# a right-to-left override (U+202E), and HTML, on lines ending CRLF with a tab.
BODY = b"ok\x1b[31mred\x07\x00done\xc2\x85\r\n<b>&\ttab\xe2\x80\xaeevil"
# Never raw on a page: C0 controls but tab, newline and CR (HTML reads CRLF as
# a newline), DEL, C1, and the invisible format characters.
_RAW = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]"
)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["w" * 32],
        webhook_allow_private_networks=True,  # the receiver is on loopback
        webhook_worker="off",  # the test drives its own
        webhook_timeout=10,
    )


@pytest.fixture
async def worker(engine: AsyncEngine, settings: Settings) -> AsyncIterator[Worker]:
    found = new_worker(engine, settings)
    yield found
    await found.close()


async def test_a_receivers_control_characters_show_as_escapes_on_the_delivery_page(
    session: AsyncSession, signed_in: SignedIn, worker: Worker
) -> None:
    organization = await create_org(session)
    owner = await add_member(session, organization, Role.owner)
    await session.commit()
    browser = await signed_in(owner)

    async def answer(_: Received) -> Answer:
        return 200, {"content-type": "text/plain"}, BODY

    async with Receiver(answer) as receiver:
        added = await browser.submit(PAGE, {"url": receiver.url})
        assert _SECRET.search(added.text), added.text
        endpoint = added.url.path
        await browser.submit(f"{endpoint}/test")
        await worker.drain()
        log = await browser.get(endpoint)
        match = _DELIVERY.search(log.text)
        assert match, log.text
        page = await browser.get(f"{endpoint}/deliveries/{match.group(1)}")

    assert page.status_code == 200
    assert len(receiver.received) == 1
    # NUL is dropped before the answer is stored (PostgreSQL text refuses it).
    shown = "ok\\u001b[31mred\\u0007done\\u0085\r\n&lt;b&gt;&amp;\ttab\\u202eevil"
    assert f'<pre aria-label="Answer to attempt 1">{shown}</pre>' in page.text
    assert _RAW.findall(page.text) == []


def test_invisible_format_characters_show_as_the_escapes_json_writes() -> None:
    text = (
        "zero\u200bwidth \u200e\u200fmarks \u202aembedded\u202c \u2066isolated\u2069"
        " \ufeffbom \u00adsoft \u2028line \x7fdel \x9bcsi \rcr\r\nkept\n\tkept"
        " \U000e0041tag café 中文"
    )

    assert visible(text) == (
        "zero\\u200bwidth \\u200e\\u200fmarks \\u202aembedded\\u202c \\u2066isolated\\u2069"
        " \\ufeffbom \\u00adsoft \\u2028line \\u007fdel \\u009bcsi \\u000dcr\r\nkept\n\tkept"
        " \\udb40\\udc41tag café 中文"
    )


def test_what_the_filter_shows_stays_html_escaped_in_text_and_in_attributes() -> None:
    page = templates.env.from_string('<p title="{{ text|visible }}">{{ text|visible }}</p>')

    shown = page.render(text='"><script>\x1b</script>&amp;')

    escaped = "&#34;&gt;&lt;script&gt;\\u001b&lt;/script&gt;&amp;amp;"
    assert shown == f'<p title="{escaped}">{escaped}</p>'
