"""Files answers name, in the settings area: listed by name on the form's
page, downloaded by members, shared through a signed link whose life the
member chooses; another organization's file is not found."""

import re

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.config import Settings
from formsapi.models import Organization, Role
from tests.conftest import Api
from tests.file.test_uploads import FORM, PDF, _upload
from tests.support.factories import publish_over_api
from tests.web.conftest import SignedIn, add_member


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=None,
        rate_limit_standard=100_000,
        secret_key=["k" * 40],
        public_url="https://forms.test",
    )


async def test_a_member_downloads_and_shares_a_file_an_answer_names(
    api: Api, session: AsyncSession, signed_in: SignedIn
) -> None:
    form_id, secret, org_id = await publish_over_api(api, session, FORM)
    file_id = (await _upload(api, secret, form_id, "cv", PDF, name="Ada's CV.pdf")).json()["id"]
    await api.post(
        f"/v1/forms/{form_id}/submissions", secret, json={"answers": {"name": "Ada", "cv": file_id}}
    )
    organization = await session.get(Organization, org_id)
    assert organization is not None
    viewer = await add_member(session, organization, Role.viewer)
    await session.commit()
    browser = await signed_in(viewer)

    page = await browser.get(f"/forms/{form_id}")
    assert f'href="/forms/{form_id}/files/{file_id}"' in page.text
    assert "Ada&#39;s CV.pdf" in page.text
    download = await browser.get(f"/forms/{form_id}/files/{file_id}")
    assert download.status_code == 200
    assert download.content == PDF

    shared = await browser.post(f"/forms/{form_id}/files/{file_id}/link", {"seconds": "86400"})
    assert shared.status_code == 200
    assert "valid until" in shared.text
    found = re.search(r'value="https://forms\.test(/files/[^"]+)"', shared.text)
    assert found, shared.text
    link = found.group(1).replace("&amp;", "&")
    anonymous = await api.client.get(link)
    assert anonymous.status_code == 200
    assert anonymous.content == PDF
    # Made from another site (no session token): refused, no link shown.
    forged = await browser.post(
        f"/forms/{form_id}/files/{file_id}/link", {"seconds": "3600"}, csrf=""
    )
    assert forged.status_code == 403
    assert "signature=" not in forged.text

    # A life not offered makes no link: the page says so where the member came from.
    refused = await browser.post(f"/forms/{form_id}/files/{file_id}/link", {"seconds": "999999"})
    assert refused.status_code == 303
    shown = await browser.get(refused.headers["location"])
    assert "Choose how long the link works." in shown.text
    assert "signature=" not in shown.text

    # Another organization's file, through this organization's form: not found.
    other_form, other_secret, _ = await publish_over_api(api, session, FORM)
    theirs = (await _upload(api, other_secret, other_form, "cv", PDF)).json()["id"]
    assert (await browser.get(f"/forms/{form_id}/files/{theirs}")).status_code == 404
    assert (await browser.get(f"/forms/{other_form}/files/{theirs}")).status_code == 404
