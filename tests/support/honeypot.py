"""The hosted page's honeypot, as a bot reading the page finds it."""

import re

_FIELD = re.compile(
    r'<div class="hp" aria-hidden="true"><label>[^<]*<input type="text" name="([^"]+)"'
)


def honeypot_in(page: str) -> str:
    """The name of the honeypot field on a hosted page's HTML."""
    found = _FIELD.search(page)
    assert found is not None, "the page has no honeypot"
    return found.group(1)
