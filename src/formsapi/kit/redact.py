"""Secrets that travel in paths (invitation, password reset, resume and
shared report links), kept out of every log line that quotes a path."""

import re

_LINK_TOKEN = re.compile(r"/(invitations|reset-password|resume|r)/[^\s?&\"/]+")


def redact_link_tokens(text: str) -> str:
    return _LINK_TOKEN.sub(r"/\1/[redacted]", text)
