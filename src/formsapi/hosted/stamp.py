"""A signed timestamp a page carries in a hidden input: when the service
served a respondent the first page of a form, which they cannot move.

The funnel times a completion from it, counts each of a respondent's steps
in the hour it names, and counts their start once per stamp (`claim`); a
minimum fill time against bots can check it too. It reads
`<unix milliseconds>.<nonce>.<signature>`, the nonce drawn for each page
served (two pages served in one millisecond are two stamps), the signature
an HMAC-SHA256 of the form's id, the milliseconds and the nonce under the
service's secret key (kit.secretbox), so a stamp made for one form is worth
nothing on another. A stamp that is missing, malformed, forged, from the
future or older than `MAX_AGE` is no stamp: the caller carries on without
one, never fails.
"""

import secrets
from datetime import UTC, datetime, timedelta

from formsapi.kit.secretbox import SecretBox

# Older stamps are not believed: a page kept open longer than a year.
MAX_AGE = timedelta(days=400)
# Clocks of several processes may disagree by this much.
SKEW = timedelta(seconds=5)
_NONCE = 11  # characters: 8 random bytes, URL-safe base64
_SIGNATURE = 43
_LONGEST = 15 + 1 + _NONCE + 1 + _SIGNATURE


def _message(subject: str, milliseconds: int, nonce: str) -> bytes:
    return f"formsapi stamp:{subject}:{milliseconds}:{nonce}".encode()


def make(box: SecretBox | None, subject: str, at: datetime) -> str | None:
    """A new stamp of `at` for `subject` (a form's id); None without a key to sign with."""
    if box is None:
        return None
    milliseconds = round(at.timestamp() * 1000)
    nonce = secrets.token_urlsafe(8)
    return f"{milliseconds}.{nonce}.{box.sign(_message(subject, milliseconds, nonce))}"


def read(box: SecretBox | None, subject: str, text: object, now: datetime) -> datetime | None:
    """The moment a stamp for `subject` says, if the service made it; else None."""
    if box is None or not isinstance(text, str) or len(text) > _LONGEST:
        return None
    milliseconds, _, rest = text.partition(".")
    nonce, dot, signature = rest.partition(".")
    if not dot or len(milliseconds) > 15 or not (milliseconds.isascii() and milliseconds.isdigit()):
        return None
    if not box.verify(_message(subject, int(milliseconds), nonce), signature):
        return None
    at = datetime.fromtimestamp(int(milliseconds) / 1000, UTC)
    return at if now - MAX_AGE <= at <= now + SKEW else None


def claim(text: str) -> str:
    """What names a stamp `read` believed, for counting it once: its
    signature (the service's HMAC of its form, moment and nonce)."""
    return text.rpartition(".")[2]
