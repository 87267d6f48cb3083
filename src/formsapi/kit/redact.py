"""Secrets that travel in paths (invitation, password reset, resume and
shared report links), and the person a /v1/respondents query names (an
email address, a hidden field's value), kept out of every log line that
quotes a path."""

import re

_LINK_TOKEN = re.compile(r"/(invitations|reset-password|resume|r)/[^\s?&\"/]+")
_RESPONDENT_QUERY = re.compile(r"(/v1/respondents)\?[^\s\"]*")


def redact_link_tokens(text: str) -> str:
    return _RESPONDENT_QUERY.sub(r"\1?[redacted]", _LINK_TOKEN.sub(r"/\1/[redacted]", text))
