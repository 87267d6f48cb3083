"""Secrets that travel in URLs, kept out of every log line that quotes one.

In paths: the tokens of invitation, password reset, resume and shared report
links, also where a query carries such a path (`?next=/invitations/...`,
encoded or not). In queries: an invitation's token (`invite`), a signed
link's `signature`, anything named like a credential, an email address,
and every value of a hosted page's query but its language: prefilled
answers and hidden fields may name a person, and a parameter added later
stays out of the log until it is known to be harmless."""

import re
from urllib.parse import unquote_plus, urlsplit

REDACTED = "[redacted]"
_LINK_TOKEN = re.compile(r"(/|%2[Ff])(invitations|reset-password|resume|r)(/|%2[Ff])[^\s?&\"/]+")
# A URL's query, and the path before it, as a log line quotes them.
_QUERY = re.compile(r"(?P<path>[^\s\"?]*)\?(?P<query>[^\s\"]*)")
_SECRET_PARAMETERS = frozenset(
    {"invite", "signature", "token", "secret", "password", "key", "api_key", "email"}
)
# What a hosted page's query (/f/...) may show: the language it is read in.
_HOSTED_SHOWN = frozenset({"lang"})


def _query(found: re.Match[str]) -> str:
    try:
        hosted = urlsplit(found["path"]).path.startswith("/f/")
    except ValueError:  # not a URL after all: judged by its parameters' names alone
        hosted = False
    pairs = []
    for pair in found["query"].split("&"):
        name, equals, _ = pair.partition("=")
        plain = unquote_plus(name).strip().lower()
        if pair and (plain in _SECRET_PARAMETERS or (hosted and plain not in _HOSTED_SHOWN)):
            pair = f"{name}{equals}{REDACTED}" if equals else REDACTED
        pairs.append(pair)
    return f"{found['path']}?{'&'.join(pairs)}"


def redact_url(text: str) -> str:
    """`text`, a path and query or a log line quoting them, with every
    secret it carries replaced by [redacted]."""
    text = _LINK_TOKEN.sub(lambda found: f"{found[1]}{found[2]}{found[3]}{REDACTED}", text)
    return _QUERY.sub(_query, text)
