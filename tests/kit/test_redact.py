"""What a logged URL keeps of the secrets links carry: none, however the
client spells the link (tests/test_access_log.py reads a real server's log)."""

import pytest

from formsapi.kit.redact import redact_url

TOKEN = "q3VzLMq0m5bW0Wm3c2H5d2xvY1Pf5YxWZk3cG1aQe1s"


@pytest.mark.parametrize(
    ("logged", "kept"),
    [
        (f"/f/frm_1?invite={TOKEN}", "/f/frm_1?invite=[redacted]"),
        (f"/f/frm_1?inv%69te={TOKEN}&lang=fr", "/f/frm_1?inv%69te=[redacted]&lang=fr"),
        ("/f/frm_1?email=ada%40example.org&ref=x", "/f/frm_1?email=[redacted]&ref=[redacted]"),
        ("/f/frm_1/thanks?ending=refused", "/f/frm_1/thanks?ending=[redacted]"),
        (f"/f/frm_1?{TOKEN}", "/f/frm_1?[redacted]"),
        (f"/f/frm_1/resume/{TOKEN}?invite={TOKEN}", "/f/frm_1/resume/[redacted]?invite=[redacted]"),
        (f"/r/{TOKEN}", "/r/[redacted]"),
        (f"/reset-password/{TOKEN}", "/reset-password/[redacted]"),
        (f"/invitations/{TOKEN}", "/invitations/[redacted]"),
        (f"/sign-in?next=/invitations/{TOKEN}", "/sign-in?next=/invitations/[redacted]"),
        (f"/sign-in?next=%2finvitations%2F{TOKEN}", "/sign-in?next=%2finvitations%2F[redacted]"),
        (
            "/files/fil_1?expires=1764&signature=c2ln",
            "/files/fil_1?expires=1764&signature=[redacted]",
        ),
        ("/v1/forms?page=2&limit=20", "/v1/forms?page=2&limit=20"),
        ("/v1/forms?token=x&Api_Key=y", "/v1/forms?token=[redacted]&Api_Key=[redacted]"),
        (
            f'"GET /f/frm_1?invite={TOKEN} HTTP/1.1" 200',
            '"GET /f/frm_1?invite=[redacted] HTTP/1.1" 200',
        ),
    ],
)
def test_a_logged_url_keeps_no_secret(logged: str, kept: str) -> None:
    assert redact_url(logged) == kept
    assert TOKEN not in redact_url(logged)
