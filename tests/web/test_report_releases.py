"""A shared report cannot be differenced over time: with k above 1 it shows
released figures, released again at most once a UTC day and only once k
more submissions have come in. Read before and after one person answers,
or is erased, it reads the same; past the step it moves by k or more at
once. The owner's Summary page stays exact and live all along, and a
report with k = 1, which withholds nothing, is live too."""

import re
from datetime import timedelta
from html import unescape
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.time import shift
from formsapi.models import Form
from formsapi.summary import report as report_service
from tests.conftest import Api
from tests.support.factories import (
    EVERY_SCOPE,
    create_form,
    create_key,
    create_org,
    create_submission,
    create_user,
)
from tests.web.conftest import Browser, BrowserFactory, SignedIn, path_of

BLOCKS: list[dict[str, Any]] = [{"type": "yes_no", "key": "consent", "title": "Consent"}]


def _consent(html: str) -> dict[str, str]:
    """What a page's Consent card says of each answer: its count."""
    found = re.search(r'<h3 id="q-\d+">Consent</h3>(.*?)</section>', html, re.S)
    assert found, html
    body = found.group(1).split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [
        [
            unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]
    return {row[0]: row[1] for row in rows}


async def _answer(anyone: Browser, form: Form, consent: str) -> None:
    """One person answers on the hosted page."""
    posted = await anyone.post(f"/f/{form.id}", {"consent": consent}, csrf="")
    assert posted.status_code == 303, posted.text


async def _setup(
    session: AsyncSession, signed_in: SignedIn, k: str
) -> tuple[Form, Browser, str, str]:
    """Ten said yes and six no; the owner's browser, a report link with `k`,
    and a key of the owner's."""
    organization = await create_org(session)
    owner = await create_user(session)
    _, secret = await create_key(session, organization, scopes=EVERY_SCOPE, user=owner)
    form = await create_form(session, organization, title="Survey", blocks=BLOCKS)
    for n in range(16):
        await create_submission(session, form, answers={"consent": "yes" if n < 10 else "no"})
    await session.commit()
    browser = await signed_in(owner)
    page = await browser.submit(f"/forms/{form.id}/reports", {"days": "7", "min_count": k})
    found = re.search(r'id="report-link" type="text" readonly value="([^"]+)"', page.text)
    assert found, page.text
    return form, browser, path_of(found.group(1)), secret


async def test_one_answer_never_shows_between_two_reads_of_a_shared_report(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory, api: Api
) -> None:
    form, owner, report, secret = await _setup(session, signed_in, k="5")
    anyone = browsers()
    before = await anyone.get(report)

    await _answer(browsers(), form, "yes")  # the one person the reader watches
    after = await anyone.get(report)
    exact = await owner.get(f"/forms/{form.id}/summary")
    listed = await api.get(f"/v1/forms/{form.id}/submissions?limit=100", secret)
    oldest_no = next(
        s["id"] for s in reversed(listed.json()["data"]) if s["answers"]["consent"] == "no"
    )
    erased = await api.delete(f"/v1/forms/{form.id}/submissions/{oldest_no}", secret)
    after_erasure = await anyone.get(report)
    with shift(timedelta(days=1)):  # a new day, but one submission since: no release
        next_day = await anyone.get(report)
        for _ in range(3):
            await _answer(browsers(), form, "yes")
        still = await anyone.get(report)  # four since the release, under k
        await _answer(browsers(), form, "no")
        released = await anyone.get(report)  # the fifth: released now
        for _ in range(5):
            await _answer(browsers(), form, "yes")
        same_day = await anyone.get(report)  # five more, the same day: not yet
    with shift(timedelta(days=2)):
        day_after = await anyone.get(report)

    assert _consent(before.text) == {"Yes": "10", "No": "6"}
    assert "<strong>16</strong> submissions" in before.text
    assert after.text == before.text  # the whole page: no figure moved
    assert _consent(exact.text) == {"Yes": "11", "No": "6"}  # the owner's page is exact
    assert erased.status_code == 204
    assert after_erasure.text == before.text  # nor does an erasure show
    assert next_day.text == before.text
    assert still.text == before.text
    # Released: five submissions and an erasure at once, 10 -> 14 and 6 -> 6.
    assert _consent(released.text) == {"Yes": "14", "No": "6"}
    assert "<strong>20</strong> submissions" in released.text
    assert same_day.text == released.text
    assert _consent(day_after.text) == {"Yes": "19", "No": "6"}


async def test_a_report_that_withholds_nothing_is_live(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    form, _, report, _ = await _setup(session, signed_in, k="1")
    anyone = browsers()
    before = await anyone.get(report)

    await _answer(browsers(), form, "yes")
    after = await anyone.get(report)

    assert _consent(before.text) == {"Yes": "10", "No": "6"}
    assert _consent(after.text) == {"Yes": "11", "No": "6"}
    assert "as of" not in after.text


async def test_revoking_a_link_deletes_the_figures_it_released(
    session: AsyncSession, signed_in: SignedIn, browsers: BrowserFactory
) -> None:
    form, owner, report, _ = await _setup(session, signed_in, k="5")
    organization_id, form_id = form.organization_id, form.id
    await browsers().get(report)  # released at its first read
    async with session.begin():
        [link] = await report_service.of_form(session, organization_id, form_id)
        released = link.release is not None

    summary = (await owner.get(f"/forms/{form_id}/summary")).text
    found = re.search(r'action="(/forms/[^"]+/revoke)"', summary)
    assert found
    await owner.submit(found.group(1))
    session.expire_all()
    async with session.begin():
        [link] = await report_service.of_form(session, organization_id, form_id)
        after = (link.revoked_at is not None, link.release, link.released_at)

    assert released
    assert after == (True, None, None)
