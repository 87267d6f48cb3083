"""One settings object, read from FORMSAPI_* environment variables."""

from functools import lru_cache
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from formsapi.kit.secret_url import SecretURL


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FORMSAPI_", extra="ignore")

    # sqlite:///path or postgresql://user@host/db; the async driver is chosen for you.
    database_url: SecretURL = SecretURL("sqlite:///./formsapi.db")
    # Database connections each process keeps (SQLite's too); when all are busy a
    # request waits up to database_pool_timeout seconds for one, then answers 503.
    database_pool_size: int = Field(default=10, ge=1)
    database_pool_timeout: float = Field(default=10.0, gt=0)
    # Unset: rate-limit counters live in this process. Set (redis://...): shared by every worker.
    redis_url: SecretURL | None = None
    # Namespace for our keys, so several deployments (or test runs) can share one Redis.
    redis_prefix: str = "formsapi"

    rate_limit_standard: int = Field(default=120, ge=1)  # requests per IP per minute
    rate_limit_pro: int = Field(default=1200, ge=1)
    rate_limit_enabled: bool = True
    # Posts to hosted form pages (each page's post, and each upload), apart
    # from the API's limits: per client IP, and into one form, per minute.
    public_posts_per_ip: int = Field(default=30, ge=1)
    public_posts_per_form: int = Field(default=600, ge=1)
    # A form's proof-of-work challenge: SHA-256 hashes a browser computes on
    # average to solve one (Chromium on a small shared server did some
    # 115,000 a second: about a second, as on a phone), and the minutes
    # within which one must be solved and sent.
    challenge_cost: int = Field(default=100_000, ge=1, le=100_000_000)
    challenge_minutes: int = Field(default=10, ge=1, le=120)
    # A hosted form sent sooner than this after its first page was served
    # (by the page's signed stamp) is refused as too fast: no person fills a
    # form in; 0 turns the check off.
    min_fill_seconds: float = Field(default=2.0, ge=0, le=600)
    # Proxies whose X-Forwarded-For is believed (IPs or CIDRs, comma-separated).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Larger request bodies answer 413; bodies not in by this many seconds after
    # the request began answer 408.
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    body_timeout: float = Field(default=10.0, gt=0)

    # Uploads to file questions: bytes per file at most, whatever a form
    # allows; where they are kept (the database in chunks, or an
    # S3-compatible store: FORMSAPI_S3_* below, credentials as boto3 finds
    # them, e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
    upload_max_bytes: int = Field(default=100 * 1024 * 1024, ge=1024)
    upload_storage: Literal["database", "s3"] = "database"
    s3_bucket: str | None = None
    s3_endpoint_url: str | None = None  # unset: AWS itself
    s3_region: str = "us-east-1"
    s3_prefix: str = "formsapi/files/"
    # An upload that sends nothing for upload_idle_timeout seconds is cut
    # (408), and so is one that, past that time, averages under
    # upload_min_rate bytes a second: a trickle holds nothing for long.
    upload_idle_timeout: float = Field(default=30.0, gt=0, le=3600)
    upload_min_rate: int = Field(default=16 * 1024, ge=1)
    # Uploads no submission took are purged after this many hours (a saved
    # partial response that names them keeps them as long as it is kept).
    upload_orphan_hours: float = Field(default=24.0, gt=0, le=24 * 365)
    # Uploads from hosted pages (no key), in bytes: from one client IP within
    # upload_orphan_hours (at most what it can have waiting unnamed at once),
    # into one form an hour, and held by one form's uploads no submission
    # names yet. Past any, refused before a byte is read.
    upload_bytes_per_ip: int = Field(default=1024**3, ge=1024 * 1024)
    upload_bytes_per_form: int = Field(default=4 * 1024**3, ge=1024 * 1024)
    upload_orphan_bytes_per_form: int = Field(default=4 * 1024**3, ge=1024 * 1024)
    # Signed download links live at most this many seconds (default 7 days).
    file_link_max_seconds: int = Field(default=7 * 86400, ge=60, le=365 * 86400)

    # The change feed reports a delete for this many days; a client whose
    # cursor is older must copy the form again (410).
    tombstone_days: int = Field(default=30, ge=1, le=36500)
    # Memory each serving process may use to hold forms' submissions for
    # summaries filtered by an answer or a hidden field (summary/held.py),
    # least recently asked dropped first; 0 counts them in the database.
    summary_memory_mb: int = Field(default=256, ge=0, le=1_048_576)
    # Forms with at least this many submissions are read into that memory
    # ahead of any ask, the largest first, at start and each minute after,
    # into the room left; 0 reads a form only once it is asked.
    summary_warm_from: int = Field(default=10_000, ge=0)
    # Where each warmed form held in memory is also kept on disk, a file
    # each, so that a process starting holds it again from its file and the
    # changes since, not from all its submissions: unset, beside an SQLite
    # database file (`<file>.summaries`), nowhere on PostgreSQL; "" nowhere.
    summary_dir: str | None = None
    # The events list, and webhook deliveries with their attempts, are kept this many days.
    event_days: int = Field(default=30, ge=1, le=36500)
    # On shutdown, requests still running (a long export) get this many
    # seconds to finish before they are cut.
    shutdown_grace: int = Field(default=10, ge=0, le=3600)
    # Views and starts of hosted pages, and posts refused as spam, are
    # counted in each process and written this often (and at shutdown): the
    # funnel's and the refusals' freshness.
    funnel_flush_seconds: float = Field(default=5.0, gt=0, le=300)

    # Written to the 'Server' log line and the curl hint printed by `formsapi serve --demo`,
    # and the base of links sent by mail (never the request's Host header, which a
    # client chooses).
    public_url: str = "http://127.0.0.1:8000"

    # smtp://[user:password@]host[:port] (STARTTLS when offered) or smtps:// (TLS).
    # Set: invitations and password resets are mailed, never shown on screen.
    smtp_url: SecretURL | None = None
    smtp_from: str = "formsapi <no-reply@localhost>"
    # A respondent's copy of their answers goes to an address anyone can type:
    # copies one address is mailed in a UTC day, whatever the forms, and
    # copies one form mails in a UTC day; 0 sends none.
    copies_per_address: int = Field(default=3, ge=0, le=1000)
    copies_per_form: int = Field(default=1000, ge=0, le=10_000_000)

    # Seals secrets the service must read back (webhook signing secrets):
    # one or more keys of 32+ characters, comma-separated, the first used to
    # seal. Unset with SQLite: a key file beside the database is made and used.
    # Unset with PostgreSQL: webhooks are unavailable until it is set, the same
    # on every process.
    secret_key: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)

    # Webhooks. Loopback and private addresses (and plain http) are refused
    # unless this is set: for local development and tests.
    webhook_allow_private_networks: bool = False
    # Whether `formsapi serve` delivers webhooks too: auto does with SQLite
    # (one process) and leaves it to `formsapi worker` processes with PostgreSQL.
    webhook_worker: Literal["auto", "on", "off"] = "auto"
    webhook_timeout: float = Field(default=15.0, gt=0, le=300)
    # Seconds before each attempt: the first at once, the last about three days on.
    webhook_retry_schedule: Annotated[list[float], NoDecode] = Field(
        default_factory=lambda: [0.0, 5.0, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
        min_length=1,
    )
    # Deliveries one worker process has in flight: in all, for one
    # organization, to one endpoint. An organization's share is kept well
    # below the whole, so however slow its receivers, others find free slots.
    webhook_concurrency: int = Field(default=128, ge=1, le=10_000)
    webhook_organization_concurrency: int = Field(default=16, ge=1, le=10_000)
    webhook_endpoint_concurrency: int = Field(default=8, ge=1, le=1000)
    # Webhook hosts are looked up by these DNS servers ("address" or
    # "address:port", comma-separated; unset: the system's /etc/resolv.conf),
    # each lookup given at most webhook_dns_timeout seconds.
    webhook_dns_servers: Annotated[list[str], NoDecode] = Field(default_factory=list)
    webhook_dns_timeout: float = Field(default=5.0, gt=0, le=60)

    @field_validator("secret_key", "webhook_retry_schedule", "webhook_dns_servers", mode="before")
    @classmethod
    def _split_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("webhook_retry_schedule")
    @classmethod
    def _schedule(cls, value: list[float]) -> list[float]:
        if any(step < 0 for step in value):
            raise ValueError("each step is a number of seconds, 0 or more")
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("redis_url", "smtp_url", "s3_bucket", "s3_endpoint_url", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return value or None


@lru_cache
def get_settings() -> Settings:
    return Settings()
