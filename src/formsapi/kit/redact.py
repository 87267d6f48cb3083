"""Secrets that travel in paths (invitation and password reset links), kept
out of every log line that quotes a path."""

import re

_LINK_TOKEN = re.compile(r"/(invitations|reset-password)/[^\s?&\"/]+")


def redact_link_tokens(text: str) -> str:
    return _LINK_TOKEN.sub(r"/\1/[redacted]", text)
