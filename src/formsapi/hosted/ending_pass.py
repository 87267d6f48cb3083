"""The pass that shows a respondent the ending they reached: an ending's
title and text are for the one who answered (a meeting link, a code), not
for anyone who types its key into the thank-you page's address.

A submission taken whose ending is a page of its own (no recall: nothing of
its answers in it) is sent on to `/f/{formId}/thanks?ending=<key>&token=<pass>`,
the pass reading `<unix seconds>.<signature>`: until when it shows, and an
HMAC-SHA256 of the form's id, the ending's key and that moment under the
service's secret key (kit.secretbox). The respondent can reload the page for
`LIFETIME`; without a pass, or with one expired, forged or made for another
form or ending, the page thanks in general.
"""

from datetime import datetime, timedelta

from formsapi.kit.secretbox import SecretBox

LIFETIME = timedelta(hours=1)
_LONGEST = 12 + 1 + 43  # seconds, the dot, the signature


def _message(form_id: str, key: str, until: int) -> bytes:
    return f"formsapi ending:{form_id}:{key}:{until}".encode()


def make(box: SecretBox | None, form_id: str, key: str, now: datetime) -> str | None:
    """A pass to the ending `key` of the form, good for LIFETIME from `now`;
    None without a key to sign with."""
    if box is None:
        return None
    until = int((now + LIFETIME).timestamp())
    return f"{until}.{box.sign(_message(form_id, key, until))}"


def shows(box: SecretBox | None, form_id: str, key: str, text: object, now: datetime) -> bool:
    """Whether `text` is a pass the service made to this form's ending `key`,
    still good at `now`."""
    if box is None or not isinstance(text, str) or len(text) > _LONGEST:
        return False
    seconds, dot, signature = text.partition(".")
    if not dot or len(seconds) > 12 or not (seconds.isascii() and seconds.isdigit()):
        return False
    until = int(seconds)
    return until > now.timestamp() and box.verify(_message(form_id, key, until), signature)
