"""`formsapi`: serve, migrate, and manage organizations, users, members and keys.

Thin: each command parses its arguments and calls services inside one session
that commits when the command succeeds. Errors print one line and exit non-zero.
"""

import asyncio
import importlib
import os
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi import demo as demo_data
from formsapi.api_key import service as api_key_service
from formsapi.api_key.epoch import AuthEpoch
from formsapi.api_key.scopes import Scope
from formsapi.cli.launch import uncollected
from formsapi.config import get_settings
from formsapi.db.engine import create_engine, dispose
from formsapi.db.migrations import SchemaNotCurrent, check_schema, migrate
from formsapi.db.session import create_sessionmaker, create_write_sessionmaker, session_scope
from formsapi.errors import FormsAPIError
from formsapi.kit.redis_pipe import RedisPipe
from formsapi.kit.secret_url import scrub
from formsapi.kit.time import isoformat_z
from formsapi.member import service as member_service
from formsapi.models import Membership, Organization, Plan, Role, User
from formsapi.organization import service as organization_service
from formsapi.submission import service as submission_service
from formsapi.user import service as user_service

T = TypeVar("T")

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="formsapi: forms and submissions with a versioned REST API.",
)
org_app = typer.Typer(no_args_is_help=True, help="Organizations.")
user_app = typer.Typer(no_args_is_help=True, help="Users.")
member_app = typer.Typer(no_args_is_help=True, help="Memberships of users in organizations.")
key_app = typer.Typer(no_args_is_help=True, help="API keys.")
docs_app = typer.Typer(no_args_is_help=True, help="This documentation site.")
app.add_typer(org_app, name="org")
app.add_typer(user_app, name="user")
app.add_typer(member_app, name="member")
app.add_typer(key_app, name="key")
app.add_typer(docs_app, name="docs")

DEMO_EMAIL = "demo@example.com"
# The demo key is for trying everything, writes included; its owner may grant them all.
DEMO_SCOPES = [str(scope) for scope in Scope]


def run(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in one committed session on the configured database, which
    must already have this version's schema (`formsapi migrate`)."""
    settings = get_settings()

    async def main() -> T:
        engine = create_engine(settings.database_url.get_secret_value())
        # Revocations and role changes made here reach the servers' key caches.
        redis = RedisPipe(settings.redis_url.get_secret_value()) if settings.redis_url else None
        epoch = AuthEpoch(redis, settings.redis_prefix)
        try:
            await check_schema(engine)
            writes = create_write_sessionmaker(engine)
            async with session_scope(writes, epoch.after_commit) as session:
                return await work(session)
        finally:
            await dispose(engine)
            if redis is not None:
                await redis.close()

    return asyncio.run(main())


def err(message: str) -> None:
    """One line to standard error, with every configured password masked."""
    try:
        settings = get_settings()
        message = scrub(message, settings.database_url, settings.redis_url, settings.smtp_url)
    except ValueError:  # the settings themselves are invalid: nothing configured to mask
        pass
    typer.echo(message, err=True)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=64,
            help="Worker processes. Default: one per CPU core when FORMSAPI_REDIS_URL is "
            "set (measured best: bench/RESULTS.md), else 1, since without Redis each "
            "worker would keep its own rate-limit counters.",
        ),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Fill an empty database with demo data and print a curl line with a fresh key.",
        ),
    ] = False,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = True,
) -> None:
    """Serve the API (migrating the database first)."""
    with uncollected():
        import uvicorn

        importlib.import_module("formsapi.app")  # which uvicorn then finds imported

    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"  # noqa: S104
    if not os.environ.get("FORMSAPI_PUBLIC_URL"):
        # The links the service makes (mailed, signed file links) lead here
        # unless told otherwise; the workers read the same environment.
        os.environ["FORMSAPI_PUBLIC_URL"] = base
        get_settings.cache_clear()
    settings = get_settings()
    _migrate(settings.database_url.get_secret_value())
    if demo:
        _print_demo_hint(run(_ensure_demo), base)
    if workers is None:
        workers = (os.cpu_count() or 1) if settings.redis_url else 1
    if workers > 1 and not settings.redis_url:
        err(
            "warning: without FORMSAPI_REDIS_URL each worker keeps its own rate-limit "
            "counters; set it to share one limit."
        )
    uvicorn.run(
        "formsapi.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,  # the app applies FORMSAPI_TRUSTED_PROXIES itself
        server_header=False,
        access_log=access_log,
        log_level="info",
        # A long export must not hold the process past its grace.
        timeout_graceful_shutdown=settings.shutdown_grace,
    )


@app.command()
def worker() -> None:
    """Deliver webhooks and send notification mail until stopped (SIGTERM or
    Ctrl-C, which finish or hand back what is in flight). With PostgreSQL,
    run as many as the load needs, on any machines; with SQLite, `serve`
    does this itself."""
    from formsapi.kit.mail import Mailer
    from formsapi.notification.sender import Sender, fan_out
    from formsapi.notification.service import CopyRules
    from formsapi.webhook.service import secret_box
    from formsapi.webhook.worker import Worker

    settings = get_settings()
    box = secret_box(settings)
    mailer = Mailer(settings.smtp_url, settings.smtp_from)
    if box is None and not mailer.enabled:
        err("error: set FORMSAPI_SECRET_KEY (the same on every process) to deliver webhooks")
        raise typer.Exit(1)

    async def main() -> None:
        engine = create_engine(settings.database_url.get_secret_value())
        try:
            await check_schema(engine)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signal_number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signal_number, stop.set)
            sessionmaker = create_sessionmaker(engine)
            copies = CopyRules.of(settings, box)
            sender = Sender(sessionmaker, mailer, settings.public_url, copies)
            work = [
                Worker(
                    sessionmaker,
                    settings,
                    box,
                    fan_out=fan_out(sender) if mailer.enabled else None,
                ).run(stop, settings.shutdown_grace)
            ]
            if mailer.enabled:
                work.append(sender.run(stop, settings.shutdown_grace))
            doing = ["delivering webhooks" if box else "", "sending mail" if mailer.enabled else ""]
            typer.echo(f"{' and '.join(filter(None, doing))}; stop with Ctrl-C", err=True)
            if box is None:
                err("warning: webhooks are not delivered without FORMSAPI_SECRET_KEY")
            await asyncio.gather(*work)
        finally:
            await dispose(engine)

    try:
        asyncio.run(main())
    except SchemaNotCurrent as error:
        err(f"error: {error}")
        raise typer.Exit(1) from None


@app.command("migrate")
def migrate_command() -> None:
    """Create or upgrade the database schema."""
    _migrate(get_settings().database_url.get_secret_value())
    typer.echo("database is up to date")


# The revision that began the answer counts (models.AnswerCount).
ANSWER_COUNTS = 21


def _migrate(url: str) -> None:
    """Migrate; a database that had submissions before the answer counts
    began has them counted (revisions are numbered in order)."""
    before = migrate(url)
    if before and max(int(revision) for revision in before) < ANSWER_COUNTS:
        err("counting the answers stored so far, for summaries")
        run(_recount_answers)


async def _recount_answers(session: AsyncSession) -> None:
    for organization_id in await organization_service.all_ids(session):
        await submission_service.recount_answers(session, organization_id)


@org_app.command("create")
def org_create(
    name: Annotated[str, typer.Option(help="Display name.")],
    plan: Annotated[Plan, typer.Option(help="Rate-limit plan.")] = Plan.standard,
) -> None:
    """Create an organization and print its id."""
    organization = run(lambda s: organization_service.create(s, name, plan))
    typer.echo(organization.id)


@user_app.command("create")
def user_create(email: Annotated[str, typer.Option(help="Sign-in email.")]) -> None:
    """Create a user; the password is read from standard input."""
    password = (
        sys.stdin.readline().rstrip("\r\n")
        if not sys.stdin.isatty()
        else typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    )
    user = run(lambda s: user_service.create(s, email, password))
    typer.echo(user.id)


@user_app.command("reset-link")
def user_reset_link(email: Annotated[str, typer.Option(help="The account's email.")]) -> None:
    """Print a one-time link (valid an hour) through which the account's holder
    chooses a new password: for servers without FORMSAPI_SMTP_URL."""

    async def work(session: AsyncSession) -> str:
        started = await user_service.start_reset(session, email)
        if started is None:
            raise user_service.NoPassword(email)
        return started[1]

    token = run(work)
    typer.echo(f"{get_settings().public_url.rstrip('/')}/reset-password/{token}")


@member_app.command("add")
def member_add(
    org: Annotated[str, typer.Option(help="Organization id.")],
    email: Annotated[str, typer.Option(help="The user's email.")],
    role: Annotated[Role, typer.Option(help="Role in the organization.")],
) -> None:
    """Make an existing user a member of an organization (or change their role).
    The operator's shortcut: people in the settings area invite instead."""

    async def work(session: AsyncSession) -> Membership:
        organization = await organization_service.get(session, org)
        user = await user_service.get_by_email(session, email)
        return await member_service.add_directly(session, organization.id, user, role)

    membership = run(work)
    typer.echo(f"{email} is {membership.role} of {org}")


@key_app.command("create")
def key_create(
    org: Annotated[str, typer.Option(help="Organization id.")],
    email: Annotated[str, typer.Option(help="The member generating the key.")],
    name: Annotated[str, typer.Option(help="What the key is for.")],
    scope: Annotated[
        list[str] | None,
        typer.Option(help="Scope to grant; repeat for several. Default: all read scopes."),
    ] = None,
) -> None:
    """Generate a key and print its secret, alone, on standard output (shown once)."""

    async def work(session: AsyncSession) -> str:
        organization = await organization_service.get(session, org)
        user = await user_service.get_by_email(session, email)
        created = await api_key_service.create(session, organization, user, name, scope)
        return created.secret

    typer.echo(run(work))


@key_app.command("list")
def key_list(org: Annotated[str, typer.Option(help="Organization id.")]) -> None:
    """List an organization's keys (never their secrets)."""

    async def work(session: AsyncSession) -> list[str]:
        await organization_service.get(session, org)
        keys = await api_key_service.list_for_organization(session, org)
        return [
            "\t".join(
                [
                    key.id,
                    key.prefix + "…",
                    key.name,
                    ",".join(key.scopes),
                    isoformat_z(key.created_at),
                    isoformat_z(key.last_used_at) if key.last_used_at else "never used",
                    f"revoked {isoformat_z(key.revoked_at)}" if key.revoked_at else "active",
                ]
            )
            for key in keys
        ]

    for line in run(work):
        typer.echo(line)


@key_app.command("revoke")
def key_revoke(key_id: Annotated[str, typer.Argument(help="The key's id (key_...).")]) -> None:
    """Revoke a key; it is refused from the next request on."""
    key = run(lambda s: api_key_service.revoke(s, key_id))
    typer.echo(f"revoked {key.id}")


# The repository this package is installed from (an editable install): the
# site is built from its mkdocs.yml and docs/, which a wheel does not carry.
REPOSITORY = Path(__file__).resolve().parents[3]


@docs_app.command("serve")
def docs_serve(
    address: Annotated[str, typer.Option(help="Where to serve the site.")] = "127.0.0.1:8001",
) -> None:
    """Serve the documentation site from the repository, rebuilt as it is
    edited: `mkdocs serve`, which works as well from the repository's root."""
    config = REPOSITORY / "mkdocs.yml"
    if not config.is_file():
        err(f"error: no {config}: the site is served from a clone of the repository")
        raise typer.Exit(1)
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.is_file():
        err("error: mkdocs is not installed: pip install -e '.[test]'")
        raise typer.Exit(1)
    argv = [str(mkdocs), "serve", "--config-file", str(config), "--dev-addr", address]
    os.chdir(REPOSITORY)
    os.execv(argv[0], argv)  # noqa: S606 - mkdocs, beside this interpreter


@app.command()
def demo(
    org: Annotated[str | None, typer.Option(help="Fill this organization.")] = None,
    forms: Annotated[int, typer.Option(min=1, max=1000)] = 8,
    submissions: Annotated[int, typer.Option(min=0, max=50_000_000)] = 2000,
    seed: Annotated[int | None, typer.Option(help="Same seed, same data.")] = None,
) -> None:
    """Fill an organization with realistic forms and submissions.

    With no --org, create one plus an owner and a key, and print how to call the API.
    """

    async def work(session: AsyncSession) -> tuple[Organization, tuple[str, str] | None]:
        access = None
        if org is None:
            organization, owner = await _create_demo_org(session)
            access = await _demo_access(session, organization, owner)
        else:
            organization = await organization_service.get(session, org)
        await _fill_with_progress(session, organization.id, forms, submissions, seed)
        return organization, access

    organization, access = run(work)
    typer.echo(f"filled {organization.id} with {forms} forms and {submissions} submissions")
    if access is not None:
        _print_demo_hint((organization.id, DEMO_EMAIL, *access), get_settings().public_url)


async def _fill_with_progress(
    session: AsyncSession,
    organization_id: str,
    forms: int,
    submissions: int,
    seed: int | None,
) -> None:
    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, disable=submissions < 10_000, transient=True) as bar:
        task = bar.add_task("submissions", total=submissions)
        await demo_data.fill(
            session,
            organization_id,
            forms=forms,
            submissions=submissions,
            seed=seed,
            progress=lambda n: bar.advance(task, n),
        )


async def _create_demo_org(session: AsyncSession) -> tuple[Organization, User]:
    organization = await organization_service.create(session, "Acme (demo)", Plan.standard)
    user = await user_service.find(session, DEMO_EMAIL)
    if user is None:
        user = await user_service.create(session, DEMO_EMAIL, secrets.token_urlsafe(12))
    await member_service.add_directly(session, organization.id, user, Role.owner)
    return organization, user


async def _ensure_demo(session: AsyncSession) -> tuple[str, str, str, str]:
    """The demo organization, created and filled on first use, with a fresh key
    and a fresh password for its owner: `--demo` is for trying things out, and
    a password printed by an earlier run is easily lost."""
    owner = await user_service.find(session, DEMO_EMAIL)
    owned = [
        organization
        for organization, role in (
            await member_service.organizations_of(session, owner.id) if owner else []
        )
        if role == Role.owner
    ]
    if owner is None or not owned:
        organization, owner = await _create_demo_org(session)
        await _fill_with_progress(session, organization.id, 8, 2000, seed=None)
    else:
        organization = owned[0]
    return (organization.id, DEMO_EMAIL, *await _demo_access(session, organization, owner))


async def _demo_access(
    session: AsyncSession, organization: Organization, owner: User
) -> tuple[str, str]:
    """A fresh password for the demo owner and a fresh key: (password, secret)."""
    password = secrets.token_urlsafe(12)
    owner.password_hash = await user_service.hash_password(password)
    created = await api_key_service.create(session, organization, owner, "demo", DEMO_SCOPES)
    return password, created.secret


def _print_demo_hint(demo: tuple[str, str, str, str], base_url: str) -> None:
    organization_id, email, password, secret = demo
    err(f"\nDemo organization {organization_id}, owner {email}")
    err(f"Settings area (forms, API keys, members): {base_url}/sign-in")
    err(f"  email: {email}   password: {password}   (a new one each `serve --demo`)\n")
    err("Try the API with this key (shown once):\n")
    err(f"  curl -H 'Authorization: Bearer {secret}' {base_url}/v1/forms\n")
    err(f"API reference: {base_url}/v1/docs\n")


def main() -> None:
    """Console entry point: one-line errors, no tracebacks, non-zero exits."""
    try:
        code = app(standalone_mode=False)
    except FormsAPIError as error:
        err(f"error: {error.detail}")
        sys.exit(1)
    except typer.Abort:
        err("aborted")
        sys.exit(130)
    except typer.TyperException as error:  # bad arguments: Click's usage errors
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        if message:  # empty after `formsapi` alone: the help was the answer
            err(f"error: {message.replace('Value error, ', '')}")
        sys.exit(getattr(error, "exit_code", 2))
    except (OSError, ValueError) as error:
        err(f"error: {error}")
        sys.exit(1)
    except SchemaNotCurrent as error:
        err(f"error: {error}")
        sys.exit(1)
    except SQLAlchemyError as error:
        # The driver's own words, without SQLAlchemy's multi-line wrapper.
        cause = getattr(error, "orig", None) or error
        err(f"error: database {get_settings().database_url}: {cause}".splitlines()[0])
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
