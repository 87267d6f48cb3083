"""URLs that may carry a password (the database's, Redis's, the mail
server's): kept in a secret type that prints with the password masked, so no
error message, log line or repr can show it."""

from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from pydantic import Secret

_SECRET_QUERY_KEYS = frozenset({"password", "passwd", "sslpassword"})
MASK = "***"


def mask_password(url: str) -> str:
    """`url` with any password in it (user info or query) replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK  # unparseable: show nothing of it
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if colon else netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in _SECRET_QUERY_KEYS for key, _ in pairs):
            query = urlencode(
                [(k, MASK if k.lower() in _SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*"
            )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class SecretURL(Secret[str]):
    """Use `.get_secret_value()` where the URL is needed; anywhere else it shows masked."""

    def _display(self) -> str:
        return mask_password(self.get_secret_value())


def scrub(text: str, *urls: SecretURL | None) -> str:
    """`text` with every password of `urls` masked, wherever and however it
    appears (the whole URL, or the password alone, raw or %-decoded)."""
    for url in urls:
        if url is None:
            continue
        raw = url.get_secret_value()
        text = text.replace(raw, mask_password(raw))
        try:
            parts = urlsplit(raw)
            passwords = {parts.password} | {
                value for key, value in parse_qsl(parts.query) if key.lower() in _SECRET_QUERY_KEYS
            }
        except ValueError:
            passwords = set()
        for password in passwords - {None, ""}:
            assert password is not None
            text = text.replace(password, MASK)
            text = text.replace(unquote(password), MASK)
    return text
