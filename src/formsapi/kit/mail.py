"""Plain-text mail over SMTP (aiosmtplib), configured by one URL:
`smtp://[user:password@]host[:port]` (STARTTLS when the server offers it) or
`smtps://...` (TLS from the first byte). Query options: `timeout` (seconds,
default 10) and `starttls=required` to refuse a server that does not offer it.
"""

from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib

from formsapi.kit.secret_url import SecretURL


class MailNotSent(Exception):
    """The server refused the message or could not be reached; `permanent`
    when it refused it for good (a 5xx reply), not worth trying again."""

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.permanent = permanent


@dataclass(frozen=True, slots=True)
class _Server:
    host: str
    port: int
    tls: bool
    start_tls: bool | None  # None: when offered
    timeout: float
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def _server(url: str) -> _Server:
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError("FORMSAPI_SMTP_URL must look like smtp://host:port or smtps://host:port")
    options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = set(options) - {"timeout", "starttls"}
    if unknown:
        raise ValueError(f"SMTP URL options not supported: {', '.join(sorted(unknown))}")
    tls = parts.scheme == "smtps"
    return _Server(
        host=parts.hostname,
        port=parts.port or (465 if tls else 25),
        tls=tls,
        start_tls=True if options.get("starttls") == "required" else None,
        timeout=float(options.get("timeout", 10)),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


class Mailer:
    """Sends mail when a server is configured; `enabled` says whether it is."""

    def __init__(self, url: SecretURL | None, sender: str) -> None:
        self._server = _server(url.get_secret_value()) if url is not None else None
        self.sender = sender

    @property
    def enabled(self) -> bool:
        return self._server is not None

    @property
    def timeout(self) -> float:
        """Seconds each exchange with the server may take."""
        return self._server.timeout if self._server is not None else 0.0

    async def send(self, to: str, subject: str, text: str) -> None:
        try:
            message = EmailMessage()
            message["From"] = self.sender
            message["To"] = to
            message["Subject"] = subject
            message["Message-ID"] = make_msgid(domain="formsapi")
            message.set_content(text)
        except ValueError:  # a line break in a header: never sent
            raise MailNotSent("ValueError", permanent=True) from None
        await self.deliver(message)

    async def deliver(self, message: EmailMessage) -> None:
        """Hand `message` (its From, To and Message-ID set) to the server;
        returns once the server accepted it."""
        server = self._server
        if server is None:
            raise MailNotSent("no mail server is configured")
        try:
            await aiosmtplib.send(
                message,
                hostname=server.host,
                port=server.port,
                username=server.username,
                password=server.password,
                use_tls=server.tls,
                start_tls=False if server.tls else server.start_tls,
                timeout=server.timeout,
            )
        except (aiosmtplib.SMTPException, OSError, ValueError) as error:
            # The type and the server's reply code only: no address or credential.
            code = getattr(error, "code", None)
            codes = [code] if code else []
            if isinstance(error, aiosmtplib.SMTPRecipientsRefused):
                codes = [refused.code for refused in error.recipients]
            raise MailNotSent(
                f"{type(error).__name__}{f' {codes[0]}' if codes else ''}",
                permanent=bool(codes) and all(c >= 500 for c in codes),
            ) from None
