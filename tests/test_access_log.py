"""The access log of a whole run of `formsapi serve` holds no secret a link
carries: every kind of token the service makes is used against a real
server process, each as its holder would, and the server's output is then
read whole. The requests are logged (a redacted line for each), their
tokens are not, nor the address a hosted page's link prefills."""

import asyncio
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from formsapi.db.engine import create_engine, dispose
from formsapi.db.session import create_sessionmaker, session_scope
from formsapi.kit.time import utcnow
from formsapi.member import service as member_service
from formsapi.models import User
from formsapi.summary import report as report_service
from tests.support.servers import Server, clean_env, cli, start_server, stop_servers
from tests.test_server import Tenant, member_key, tenant  # noqa: F401 - the module's database

RESPONDENT = "ada.lovelace@example.org"
INVITEE = "grace.hopper@example.org"
FORM = {
    "title": "Workshop",
    "blocks": [
        {"type": "email", "key": "email", "title": "Email", "prefill": True},
        {"type": "short_text", "key": "name", "title": "Name"},
        {"type": "page_break"},
        {"type": "file", "key": "cv", "title": "CV"},
    ],
}
# What the server answered with, where it holds a token: a saved page's link.
RESUME = re.compile(r"/f/frm_[0-9a-z]+/resume/([A-Za-z0-9_-]{43})")


@pytest.fixture
def server(tenant: Tenant, tmp_path: Path) -> Iterator[Server]:  # noqa: F811
    env = clean_env(database_url=tenant.database_url, secret_key="s" * 32)
    started = start_server(tmp_path, env, "logged")
    try:
        started.wait_until_healthy()
        yield started
    finally:
        stop_servers([started])


async def _arranged(database_url: str, organization_id: str, form_id: str) -> tuple[str, str]:
    """A shared report's token and an organization invitation's, made as the
    settings area makes them."""
    engine = create_engine(database_url)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            report = await report_service.create(
                session,
                organization_id,
                form_id,
                None,
                expires_at=utcnow() + timedelta(days=1),
                hidden_questions=[],
                min_count=5,
                now=utcnow(),
            )
            owner = await session.scalar(select(User).where(User.email == "ops@example.com"))
            assert owner is not None
            invited = await member_service.invite(
                session, organization_id, owner.id, "owner", INVITEE, "editor"
            )
            return report.token, invited.token
    finally:
        await dispose(engine)


def test_no_token_of_any_kind_reaches_the_access_log(
    server: Server,
    tenant: Tenant,  # noqa: F811
    tmp_path: Path,
) -> None:
    org, secret = member_key(
        tmp_path,
        tenant.database_url,
        "Logged",
        "owner",
        "forms:read",
        "forms:write",
        "submissions:read",
        "submissions:write",
    )
    auth = {"Authorization": f"Bearer {secret}"}
    tokens: dict[str, str] = {}
    answered: dict[str, int] = {}
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        form_id = client.post("/v1/forms", headers=auth, json=FORM).json()["id"]
        client.patch(
            f"/v1/forms/{form_id}",
            headers=auth,
            json={"status": "published", "oneResponse": {"by": "invitation"}},
        ).raise_for_status()
        made = client.post(
            f"/v1/forms/{form_id}/invitations", headers=auth, json={"count": 1}
        ).json()
        tokens["form invitation"] = invite = made["data"][0]["token"]
        page = client.get(f"/f/{form_id}", params={"invite": invite, "email": RESPONDENT})
        answered["form invitation"] = page.status_code

        saved = client.post(
            f"/f/{form_id}",
            data={"_page": "0", "_go": "save", "_invite": invite, "email": RESPONDENT},
        )
        found = RESUME.search(saved.text)
        assert found, saved.text
        tokens["resume link"] = found[1]
        resumed = client.get(found[0], params={"invite": invite})
        answered["resume link"] = resumed.status_code

        upload = client.post(
            f"/v1/forms/{form_id}/files",
            headers=auth,
            params={"question": "cv", "name": "cv.txt"},
            content=b"my life so far",
        ).json()
        link = client.post(
            f"/v1/files/{upload['id']}/links", headers=auth, json={"expiresIn": 600}
        ).json()["url"]
        tokens["file link signature"] = re.findall(r"signature=([^&]+)", link)[0]
        answered["file link"] = client.get(link.removeprefix(server.base_url)).status_code

        report, invitation = asyncio.run(_arranged(tenant.database_url, org, form_id))
        tokens["shared report"] = report
        answered["shared report"] = client.get(f"/r/{report}").status_code
        tokens["organization invitation"] = invitation
        answered["organization invitation"] = client.get(f"/invitations/{invitation}").status_code
        sign_in = client.get(
            "/sign-in", params={"next": f"/invitations/{invitation}", "email": INVITEE}
        )
        answered["sign-in from an invitation"] = sign_in.status_code

        reset = cli(
            tmp_path, tenant.database_url, "user", "reset-link", "--email", "ops@example.com"
        )
        tokens["password reset"] = reset.rsplit("/", 1)[1]
        answered["password reset"] = client.get(
            f"/reset-password/{tokens['password reset']}"
        ).status_code
    stop_servers([server])
    logged = (tmp_path / "logged.out").read_text() + server.stderr

    assert set(answered.values()) == {200}, answered
    leaked = {kind: token for kind, token in tokens.items() if token in logged}
    assert leaked == {}
    for address in (
        RESPONDENT,
        INVITEE,
        RESPONDENT.replace("@", "%40"),
        INVITEE.replace("@", "%40"),
    ):
        assert address not in logged
    for line in (
        f'"GET /f/{form_id}?invite=[redacted]&email=[redacted] HTTP/1.1" 200',
        f'"GET /f/{form_id}/resume/[redacted]?invite=[redacted] HTTP/1.1" 200',
        '"GET /r/[redacted] HTTP/1.1" 200',
        '"GET /invitations/[redacted] HTTP/1.1" 200',
        '"GET /sign-in?next=%2Finvitations%2F[redacted]&email=[redacted] HTTP/1.1" 200',
        '"GET /reset-password/[redacted] HTTP/1.1" 200',
        'signature=[redacted] HTTP/1.1" 200',
    ):
        assert line in logged, line
