"""The `formsapi` command line on a real SQLite file.

Every command is run as an operator runs it: a working directory of its own,
FORMSAPI_DATABASE_URL in the environment, standard input, output and error
captured. Commands run in this process (tests/support/cli_runner.py) unless the test
is about the process itself, which runs the installed console script. The
database is then read back with the sqlite3 module, and keys are tried against
the real application.
"""

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pwdlib import PasswordHash

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.migrations import migrate
from tests.support import cli_runner

FORMSAPI = Path(sys.executable).parent / "formsapi"
PASSWORD = "correct horse battery"
OWNER = "owner@example.com"
OUTSIDER = "outsider@example.com"

ORG_ID = re.compile(r"org_[0-9a-z]{26}")
USER_ID = re.compile(r"usr_[0-9a-z]{26}")
SECRET = re.compile(r"fapi_[0-9A-Za-z]{46}")
CURL_LINE = re.compile(r"curl -H 'Authorization: Bearer (fapi_[0-9A-Za-z]+)' (\S+)/v1/forms")


@dataclass(frozen=True)
class Cli:
    """Runs the console script in `cwd` against the SQLite file `db`."""

    cwd: Path
    db: Path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"

    def run(
        self, *args: str, stdin: str = "", process: bool = False
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FORMSAPI_")}
        env["FORMSAPI_DATABASE_URL"] = self.url
        if not process:
            return cli_runner.run(list(args), env, self.cwd, stdin)
        return subprocess.run(
            [str(FORMSAPI), *args],
            cwd=self.cwd,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def ok(self, *args: str, stdin: str = "") -> str:
        """Run a command that must succeed; return its standard output."""
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        return result.stdout

    def rows(self, sql: str, *params: object) -> list[tuple[object, ...]]:
        with closing(sqlite3.connect(self.db)) as connection:
            return connection.execute(sql, params).fetchall()

    def create_org(self) -> str:
        return self.ok("org", "create", "--name", "Acme").strip()

    def create_user(self, email: str) -> str:
        return self.ok("user", "create", "--email", email, stdin=PASSWORD + "\n").strip()

    def add_member(self, org: str, email: str, role: str = "owner") -> str:
        return self.ok("member", "add", "--org", org, "--email", email, "--role", role)

    def create_key(self, org: str, email: str = OWNER, *scopes: str) -> str:
        scope_args = [arg for scope in scopes for arg in ("--scope", scope)]
        stdout = self.ok(
            "key", "create", "--org", org, "--email", email, "--name", "ci", *scope_args
        )
        return stdout.strip()

    def key_id(self, secret: str) -> str:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        [(key_id,)] = self.rows("SELECT id FROM api_keys WHERE secret_hash = ?", digest)
        return str(key_id)


@dataclass(frozen=True)
class Tenant:
    cli: Cli
    org: str  # OWNER is its owner; OUTSIDER exists but is no member


@pytest.fixture
def cli(workdir: Path) -> Cli:
    """A fresh database file in the test's own directory, migrated."""
    cli = Cli(cwd=workdir, db=workdir / "x.db")
    cli.ok("migrate")
    return cli


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory) -> Tenant:
    """One database shared by the module: an organization, its owner and an outsider.

    Tests add their own organizations or keys to it, never change what is here.
    """
    directory = tmp_path_factory.mktemp("cli")
    cli = Cli(cwd=directory, db=directory / "x.db")
    cli.ok("migrate")
    org = cli.create_org()
    cli.create_user(OWNER)
    cli.create_user(OUTSIDER)
    cli.add_member(org, OWNER, "owner")
    return Tenant(cli, org)


async def list_forms(database_url: str, secret: str) -> httpx.Response:
    """GET /v1/forms with `secret` on the real application over the same database."""
    app = create_app(Settings(database_url=database_url, redis_url=None))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get("/v1/forms", headers={"Authorization": f"Bearer {secret}"})
    finally:
        await release(app)


def test_migrate_creates_the_schema_in_a_fresh_file_and_is_idempotent(workdir: Path) -> None:
    cli = Cli(cwd=workdir, db=workdir / "nested" / "dir" / "x.db")

    assert cli.ok("migrate") == "database is up to date\n"
    assert cli.db.is_file()
    tables = {name for (name,) in cli.rows("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"organizations", "users", "memberships", "api_keys", "forms", "submissions"} <= tables
    [version] = cli.rows("SELECT version_num FROM alembic_version")

    org = cli.create_org()
    assert cli.ok("migrate") == "database is up to date\n"
    assert cli.rows("SELECT version_num FROM alembic_version") == [version]
    assert cli.rows("SELECT id FROM organizations") == [(org,)]


def test_org_create_prints_only_the_new_id(cli: Cli) -> None:
    standard = cli.ok("org", "create", "--name", "Acme Inc")
    pro = cli.ok("org", "create", "--name", "Globex", "--plan", "pro")

    assert ORG_ID.fullmatch(standard.removesuffix("\n")), standard
    assert ORG_ID.fullmatch(pro.removesuffix("\n")), pro
    assert standard.endswith("\n")
    assert sorted(cli.rows("SELECT id, name, plan FROM organizations")) == sorted(
        [(standard.strip(), "Acme Inc", "standard"), (pro.strip(), "Globex", "pro")]
    )


def test_user_create_reads_the_password_from_stdin(cli: Cli) -> None:
    stdout = cli.ok("user", "create", "--email", "Ada@Example.com", stdin=PASSWORD + "\n")

    assert USER_ID.fullmatch(stdout.removesuffix("\n")), stdout
    [(user_id, email, password_hash)] = cli.rows("SELECT id, email, password_hash FROM users")
    assert (user_id, email) == (stdout.strip(), "ada@example.com")
    assert PASSWORD not in str(password_hash)
    hasher = PasswordHash.recommended()
    assert hasher.verify(PASSWORD, str(password_hash))  # the line, without its newline
    assert not hasher.verify(PASSWORD + "\n", str(password_hash))


def test_user_create_rejects_a_short_password_with_one_line(cli: Cli) -> None:
    result = cli.run("user", "create", "--email", "ada@example.com", stdin="short\n")

    assert result.returncode != 0
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error:")
    assert "password" in line.lower()
    assert cli.rows("SELECT count(*) FROM users") == [(0,)]


def test_member_add_gives_a_role_and_changes_it(cli: Cli) -> None:
    org = cli.create_org()
    user_id = cli.create_user("ed@example.com")

    assert cli.add_member(org, "ed@example.com", "editor") == f"ed@example.com is editor of {org}\n"
    assert cli.rows("SELECT organization_id, user_id, role FROM memberships") == [
        (org, user_id, "editor")
    ]

    assert cli.add_member(org, "ed@example.com", "viewer") == f"ed@example.com is viewer of {org}\n"
    assert cli.rows("SELECT organization_id, user_id, role FROM memberships") == [
        (org, user_id, "viewer")
    ]


def test_member_add_refuses_to_demote_the_last_owner(cli: Cli) -> None:
    org = cli.create_org()
    cli.create_user("ada@example.com")
    cli.add_member(org, "ada@example.com", "owner")

    result = cli.run("member", "add", "--org", org, "--email", "ada@example.com", "--role", "admin")

    assert result.returncode != 0
    assert result.stderr.startswith("error: An organization must keep at least one owner")
    assert cli.rows("SELECT role FROM memberships") == [("owner",)]


async def test_key_create_prints_the_secret_alone_and_stores_only_its_hash(
    tenant: Tenant,
) -> None:
    cli = tenant.cli
    result = cli.run(
        *f"key create --org {tenant.org} --email {OWNER} --name ci --scope forms:read".split()
    )

    assert result.returncode == 0, result.stderr
    [secret] = result.stdout.splitlines()
    assert result.stdout == secret + "\n"
    assert SECRET.fullmatch(secret), secret
    assert secret not in result.stderr

    digest = hashlib.sha256(secret.encode()).hexdigest()
    [(prefix, scopes)] = cli.rows(
        "SELECT prefix, scopes FROM api_keys WHERE secret_hash = ?", digest
    )
    assert secret.startswith(str(prefix))
    assert len(str(prefix)) < len(secret)
    assert json.loads(str(scopes)) == ["forms:read"]
    for row in cli.rows("SELECT * FROM api_keys"):
        assert all(secret not in str(value) for value in row), row
    with closing(sqlite3.connect(cli.db)) as connection:
        assert all(secret not in statement for statement in connection.iterdump())

    response = await list_forms(cli.url, secret)
    assert response.status_code == 200, response.text


def test_key_create_grants_every_read_scope_by_default(tenant: Tenant) -> None:
    secret = tenant.cli.create_key(tenant.org)

    assert SECRET.fullmatch(secret)
    [(scopes,)] = tenant.cli.rows(
        "SELECT scopes FROM api_keys WHERE id = ?", tenant.cli.key_id(secret)
    )
    assert sorted(json.loads(str(scopes))) == ["events:read", "forms:read", "submissions:read"]


def test_key_list_shows_ids_and_prefixes_never_secrets(tenant: Tenant) -> None:
    cli = tenant.cli
    org = cli.create_org()
    cli.add_member(org, OWNER, "admin")
    secrets = [cli.create_key(org), cli.create_key(org, OWNER, "submissions:read")]

    stdout = cli.ok("key", "list", "--org", org)

    lines = stdout.splitlines()
    assert len(lines) == 2
    for secret in secrets:
        assert secret not in stdout
        [line] = [line for line in lines if cli.key_id(secret) in line]
        assert secret[: len("fapi_") + 6] in line
        assert "active" in line
        assert "never used" in line


def test_key_list_of_an_organization_without_keys_is_empty(tenant: Tenant) -> None:
    org = tenant.cli.create_org()

    assert tenant.cli.ok("key", "list", "--org", org) == ""


async def test_key_revoke_refuses_the_key_from_then_on(tenant: Tenant) -> None:
    cli = tenant.cli
    secret = cli.create_key(tenant.org)
    key_id = cli.key_id(secret)
    assert (await list_forms(cli.url, secret)).status_code == 200

    assert cli.ok("key", "revoke", key_id) == f"revoked {key_id}\n"

    [(revoked_at,)] = cli.rows("SELECT revoked_at FROM api_keys WHERE id = ?", key_id)
    assert revoked_at is not None
    [line] = [
        line for line in cli.ok("key", "list", "--org", tenant.org).splitlines() if key_id in line
    ]
    assert "revoked" in line
    response = await list_forms(cli.url, secret)
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]

    # Revoking again succeeds and keeps the first revocation time.
    assert cli.ok("key", "revoke", key_id) == f"revoked {key_id}\n"
    assert cli.rows("SELECT revoked_at FROM api_keys WHERE id = ?", key_id) == [(revoked_at,)]


def test_demo_fills_an_existing_organization(tenant: Tenant) -> None:
    cli = tenant.cli
    org = cli.create_org()

    result = cli.run("demo", "--org", org, "--forms", "3", "--submissions", "50")

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"filled {org} with 3 forms and 50 submissions\n"
    assert "curl" not in result.stderr  # no key is made for an existing organization
    assert cli.rows(
        "SELECT count(*), sum(response_count) FROM forms WHERE organization_id = ?", org
    ) == [(3, 50)]
    assert cli.rows("SELECT count(*) FROM submissions WHERE organization_id = ?", org) == [(50,)]
    assert cli.rows("SELECT count(*) FROM api_keys WHERE organization_id = ?", org) == [(0,)]


async def test_demo_without_org_creates_an_org_an_owner_and_a_working_key(cli: Cli) -> None:
    result = cli.run("demo", "--forms", "2", "--submissions", "10")

    assert result.returncode == 0, result.stderr
    match = re.fullmatch(r"filled (org_\w+) with 2 forms and 10 submissions\n", result.stdout)
    assert match, result.stdout
    org = match[1]
    assert cli.rows(
        "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id "
        "WHERE u.email = 'demo@example.com' AND m.organization_id = ?",
        org,
    ) == [("owner",)]

    [secret] = [m[1] for m in CURL_LINE.finditer(result.stderr)]
    assert secret not in result.stdout
    assert org in result.stderr
    response = await list_forms(cli.url, secret)
    assert response.status_code == 200, response.text
    assert response.json()["pagination"]["total"] == 2


# Each case: a command line ({org} is a real organization) and what its error must name.
BAD_ARGUMENTS = {
    "unknown plan": ("org create --name X --plan gold", "gold"),
    "unknown role": ("member add --org {org} --email {owner} --role god", "god"),
    "missing option": ("org create", "--name"),
    "option without value": ("org create --name X --plan", "--plan"),
    "unknown org": ("key list --org org_nope", "org_nope"),
    "unknown org for member": (
        "member add --org org_nope --email {owner} --role owner",
        "org_nope",
    ),
    "unknown user": ("member add --org {org} --email nobody@example.com --role owner", "nobody@"),
    "unknown command": ("frobnicate", "frobnicate"),
    "unknown subcommand": ("org delete", "delete"),
    "unknown scope": (
        "key create --org {org} --email {owner} --name k --scope forms:delete",
        "forms:delete",
    ),
    "key of a non-member": ("key create --org {org} --email {outsider} --name k", OUTSIDER),
    "unknown key": ("key revoke key_nope", "key_nope"),
    "missing key id": ("key revoke", "key_id"),
    "too few forms": ("demo --forms 0", "--forms"),
    "invalid email": ("user create --email not-an-email", "not-an-email"),
}


@pytest.mark.parametrize(("command", "named"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_give_one_error_line_and_a_failing_exit(
    tenant: Tenant, command: str, named: str
) -> None:
    keys_before = tenant.cli.rows("SELECT count(*) FROM api_keys")
    args = command.format(org=tenant.org, owner=OWNER, outsider=OUTSIDER).split()

    result = tenant.cli.run(*args, stdin=PASSWORD + "\n")

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert named in line
    assert result.stdout == ""
    assert tenant.cli.rows("SELECT count(*) FROM api_keys") == keys_before


def test_no_command_prints_the_help_and_no_error_line(cli: Cli) -> None:
    result = cli.run(process=True)  # the installed console script itself

    assert "Usage" in result.stdout
    for command in ("serve", "migrate", "org", "user", "member", "key", "demo"):
        assert command in result.stdout
    assert result.stderr == ""


BROKEN_INPUTS = [
    pytest.param("org create --name X", "junk.db", id="not a database"),
    pytest.param("org create --name X", "a-directory", id="path is a directory"),
    pytest.param("org create --name " + "a" * 201, "x.db", id="name longer than its column"),
]


@pytest.mark.parametrize(("command", "file"), BROKEN_INPUTS)
def test_database_failures_give_one_error_line(workdir: Path, command: str, file: str) -> None:
    (workdir / "junk.db").write_bytes(b"not a database, " * 512)
    (workdir / "a-directory").mkdir()
    cli = Cli(cwd=workdir, db=workdir / file)
    if file == "x.db":
        cli.ok("migrate")

    # A process of its own: a failed connection may leave a driver thread behind.
    result = cli.run(*command.split(), process=True)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")


@pytest.mark.parametrize("revision", [None, "0005"], ids=["no schema", "one release behind"])
def test_management_commands_refuse_a_database_whose_schema_is_behind(
    workdir: Path, revision: str | None
) -> None:
    cli = Cli(cwd=workdir, db=workdir / "x.db")
    if revision is not None:
        migrate(cli.url, revision)

    results = [
        cli.run("org", "create", "--name", "Acme"),
        cli.run("key", "list", "--org", "org_x"),
        cli.run("member", "add", "--org", "org_x", "--email", OWNER, "--role", "owner"),
    ]

    for result in results:
        assert result.returncode == 1
        [line] = result.stderr.splitlines()
        assert line.startswith("error: ")
        assert "`formsapi migrate`" in line
    versions = cli.rows("SELECT version_num FROM alembic_version") if revision else []
    assert versions == ([(revision,)] if revision else [])  # nothing migrated behind our back


@pytest.mark.parametrize("command", ["migrate", "key list --org org_x"])
def test_an_unreachable_database_never_shows_its_password(workdir: Path, command: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMSAPI_")}
    # Port 1 refuses at once; the password is one no output may contain.
    env["FORMSAPI_DATABASE_URL"] = "postgresql://formsapi:s3cr%40t-pa55@127.0.0.1:1/db"

    result = subprocess.run(
        [str(FORMSAPI), *command.split()],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    for leaked in ("s3cr%40t-pa55", "s3cr@t-pa55"):
        assert leaked not in result.stderr + result.stdout


async def test_user_reset_link_prints_a_link_that_lets_the_holder_choose_a_password(
    tenant: Tenant,
) -> None:
    link = tenant.cli.ok("user", "reset-link", "--email", OWNER).strip()
    unknown = tenant.cli.run("user", "reset-link", "--email", "nobody@example.com")

    assert link.startswith("http://127.0.0.1:8000/reset-password/")
    app = create_app(Settings(database_url=tenant.cli.url, redis_url=None))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            page = await client.get(link.removeprefix("http://127.0.0.1:8000"))
    finally:
        await release(app)
    assert page.status_code == 200
    assert OWNER in page.text
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: No account with a password")
