"""Real `formsapi serve` processes: shared rate limits, proxy headers, `--demo`.

Each server is the installed console script listening on a free local port, with
its output in a log file; every process is terminated at teardown, killed if it
does not stop in time.
"""

import contextlib
import http.server
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import scratch_postgres
from tests.support.servers import (
    PASSWORD,
    Server,
    clean_env,
    cli,
    in_thread,
    start_server,
    stop_servers,
)

CURL_LINE = re.compile(r"curl -H 'Authorization: Bearer (fapi_[0-9A-Za-z]+)' (\S+)/v1/forms")
CLIENT_IP = "203.0.113.7"
REVOKER_IP = "203.0.113.8"  # the revocation test's: CLIENT_IP's count is the first test's

Serve = Callable[..., list[Server]]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """serve(env, *envs, args=(), installed=False) starts one server per env, in
    parallel, and waits until every one answers /healthz."""
    started: list[Server] = []

    def start(
        *envs: dict[str, str], args: tuple[str, ...] = (), installed: bool = False
    ) -> list[Server]:
        servers = [
            start_server(tmp_path, env, f"server-{len(started) + n}", args, installed=installed)
            for n, env in enumerate(envs)
        ]
        started.extend(servers)
        for server in servers:
            server.wait_until_healthy()
        return servers

    yield start
    stop_servers(started)


@dataclass(frozen=True)
class Tenant:
    database_url: str
    secret: str


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def tenant(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tenant]:
    """A database every server of a test shares (a SQLite file, or a PostgreSQL
    database of its own), prepared with the CLI: an organization, its owner, a key."""
    directory = tmp_path_factory.mktemp("server")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{directory / 'shared.db'}"
        else:
            url = stack.enter_context(scratch_postgres(request.getfixturevalue("postgres_url")))
        cli(directory, url, "migrate")
        cli(directory, url, "user", "create", "--email", "ops@example.com", stdin=PASSWORD + "\n")
        _, secret = member_key(directory, url, "Acme", "viewer")
        yield Tenant(url, secret)


@dataclass(frozen=True)
class Pair:
    """Two servers sharing one Redis prefix, behind a trusted proxy (the
    client's address is the last X-Forwarded-For)."""

    servers: tuple[Server, Server]
    shared: dict[str, str]  # what the CLI needs to reach the same deployment


@pytest.fixture(scope="module")
def pair(
    tenant: Tenant, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    """The pair the file's tests that need nothing else of their servers use,
    started once an engine (a start costs seconds of CPU): each test uses
    client addresses of its own, so their rate-limit counts stay apart."""
    shared = {"redis_url": redis_url, "redis_prefix": f"formsapi-test-{uuid.uuid4().hex}"}
    env = clean_env(database_url=tenant.database_url, trusted_proxies="127.0.0.1", **shared)
    directory = tmp_path_factory.mktemp("pair")
    servers = (start_server(directory, env, "a"), start_server(directory, env, "b"))
    try:
        for server in servers:
            server.wait_until_healthy()
        yield Pair(servers, shared)
    finally:
        stop_servers(list(servers))


def member_key(
    cwd: Path, database_url: str, org_name: str, role: str, *scopes: str
) -> tuple[str, str]:
    """A new organization with ops@example.com as `role`, and a key of theirs:
    (organization id, secret)."""
    org = cli(cwd, database_url, "org", "create", "--name", org_name)
    cli(
        cwd,
        database_url,
        "member",
        "add",
        "--org",
        org,
        "--email",
        "ops@example.com",
        "--role",
        role,
    )
    scope_args = [arg for scope in scopes for arg in ("--scope", scope)]
    secret = cli(
        cwd,
        database_url,
        "key",
        "create",
        "--org",
        org,
        "--email",
        "ops@example.com",
        "--name",
        f"{org_name} key",
        *scope_args,
    )
    return org, secret


def get_forms(client: httpx.Client, server: Server, secret: str, ip: str) -> httpx.Response:
    return client.get(
        f"{server.base_url}/v1/forms",
        headers={"Authorization": f"Bearer {secret}", "X-Forwarded-For": ip},
    )


def assert_rate_limited(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == 429
    assert body["type"] == "/problems/rate-limited"
    retry_after = response.headers["Retry-After"]
    assert retry_after.isdigit(), retry_after
    assert 1 <= int(retry_after) <= 60
    assert response.headers["RateLimit-Limit"] == str(limit)
    assert response.headers["RateLimit-Remaining"] == "0"


def test_two_servers_share_one_limit_per_client_ip_through_redis(
    pair: Pair, tenant: Tenant
) -> None:
    a, b = pair.servers

    with httpx.Client(timeout=10) as client:
        sent = 0
        for server in (a, b):
            for _ in range(60):
                response = get_forms(client, server, tenant.secret, CLIENT_IP)
                sent += 1
                assert response.status_code == 200, (sent, response.text)
                assert response.headers["RateLimit-Limit"] == "120"
                # One count for both servers: each response sees every earlier request.
                assert response.headers["RateLimit-Remaining"] == str(120 - sent)

        assert_rate_limited(get_forms(client, a, tenant.secret, CLIENT_IP), 120)
        assert_rate_limited(get_forms(client, b, tenant.secret, CLIENT_IP), 120)

        # The limit is per client IP: another address behind the same proxy is served.
        other = get_forms(client, b, tenant.secret, "198.51.100.23")
        assert other.status_code == 200, other.text
        assert other.headers["RateLimit-Remaining"] == "119"


def test_a_key_revoked_through_the_cli_is_refused_by_every_server_at_once(
    pair: Pair, tenant: Tenant, tmp_path: Path
) -> None:
    a, b = pair.servers
    org, secret = member_key(tmp_path, tenant.database_url, "Revokers", "owner")
    key_id = next(
        line.split("\t")[0]
        for line in cli(tmp_path, tenant.database_url, "key", "list", "--org", org).splitlines()
    )

    with httpx.Client(timeout=10) as client:
        for server in (a, b):  # each worker has now cached the key
            assert get_forms(client, server, secret, REVOKER_IP).status_code == 200

        cli(tmp_path, tenant.database_url, "key", "revoke", key_id, **pair.shared)

        for server in (a, b):
            response = get_forms(client, server, secret, REVOKER_IP)
            assert response.status_code == 401, response.text
            assert "revoked" in response.json()["detail"]


def test_redis_prefix_keeps_deployments_apart(serve: Serve, tenant: Tenant, redis_url: str) -> None:
    settings = {
        "database_url": tenant.database_url,
        "redis_url": redis_url,
        "trusted_proxies": "127.0.0.1",
        "rate_limit_standard": "3",
    }
    first, second = serve(
        clean_env(**settings, redis_prefix=f"formsapi-test-{uuid.uuid4().hex}"),
        clean_env(**settings, redis_prefix=f"formsapi-test-{uuid.uuid4().hex}"),
    )

    with httpx.Client(timeout=10) as client:
        for _ in range(3):
            assert get_forms(client, first, tenant.secret, CLIENT_IP).status_code == 200
        assert_rate_limited(get_forms(client, first, tenant.secret, CLIENT_IP), 3)

        response = get_forms(client, second, tenant.secret, CLIENT_IP)
        assert response.status_code == 200, response.text
        assert response.headers["RateLimit-Remaining"] == "2"


@pytest.mark.usefixtures("whole_minute")  # in-process counters, clock-aligned windows
def test_forwarded_for_is_ignored_without_trusted_proxies(serve: Serve, tenant: Tenant) -> None:
    [server] = serve(clean_env(database_url=tenant.database_url, rate_limit_standard="5"))

    with httpx.Client(timeout=10) as client:
        for n in range(5):
            response = get_forms(client, server, tenant.secret, f"198.51.100.{n}")
            assert response.status_code == 200, response.text
            assert response.headers["RateLimit-Limit"] == "5"
            assert response.headers["RateLimit-Remaining"] == str(4 - n)

        # A new forwarded address does not buy a new allowance: the peer is counted.
        assert_rate_limited(get_forms(client, server, tenant.secret, "198.51.100.99"), 5)


def test_serve_demo_prints_a_curl_line_whose_key_works(serve: Serve, tmp_path: Path) -> None:
    # The README's command, the installed console script; no FORMSAPI_DATABASE_URL:
    # the default ./formsapi.db in the working directory.
    [server] = serve(clean_env(), args=("--demo",), installed=True)

    assert (tmp_path / "formsapi.db").is_file()
    matches = CURL_LINE.findall(server.stderr)
    assert len(matches) == 1, server.stderr
    [(secret, base_url)] = matches
    assert base_url == server.base_url

    with httpx.Client(timeout=10) as client:
        response = client.get(f"{base_url}/v1/forms", headers={"Authorization": f"Bearer {secret}"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["pagination"]["total"] == 8
        assert len(body["data"]) == 8

        assert client.get(f"{base_url}/v1/forms").status_code == 401


def test_the_hosted_page_takes_a_real_form_post(pair: Pair, tenant: Tenant, tmp_path: Path) -> None:
    server = pair.servers[0]  # asked directly: its client address is the peer's, 127.0.0.1
    _, secret = member_key(
        tmp_path,
        tenant.database_url,
        "Hosts",
        "editor",
        "forms:read",
        "forms:write",
        "submissions:read",
    )
    auth = {"Authorization": f"Bearer {secret}"}
    blocks = [
        {"type": "short_text", "key": "name", "title": "Name", "required": True},
        {
            "type": "multiple_choice",
            "key": "days",
            "title": "Days",
            "options": [{"value": "mon", "label": "Monday"}, {"value": "tue", "label": "Tuesday"}],
        },
    ]

    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        form = client.post(
            "/v1/forms", headers=auth, json={"title": "RSVP", "blocks": blocks}
        ).json()
        assert (
            client.patch(
                f"/v1/forms/{form['id']}", headers=auth, json={"status": "published"}
            ).status_code
            == 200
        )
        page = client.get(f"/f/{form['id']}")
        posted = client.post(
            f"/f/{form['id']}",
            content="name=Ada+L.&days=tue&days=mon",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        thanks = client.get(posted.headers["location"])
        stored = client.get(f"/v1/forms/{form['id']}/submissions", headers=auth).json()

    assert page.status_code == 200
    assert '<label for="field-name">Name' in page.text
    assert posted.status_code == 303
    assert thanks.status_code == 200
    assert [s["answers"] for s in stored["data"]] == [{"name": "Ada L.", "days": "mon,tue"}]


def test_a_server_is_not_taken_for_another_process_answering_on_its_port(tmp_path: Path) -> None:
    """The port free_port() found may be bound by another process first; the
    server started on it then exits. Its health check must not be satisfied
    by the other process's answers (its tests would run against a server on
    another database)."""

    class Healthy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    (tmp_path / "server.err").write_text("")
    with in_thread(other) as port, subprocess.Popen(["sleep", "60"]) as ours:
        server = Server(ours, f"http://127.0.0.1:{port}", tmp_path / "server.err")
        try:
            with pytest.raises(pytest.fail.Exception, match="answered by another process"):
                server.wait_until_healthy()
        finally:
            ours.kill()


def test_a_large_save_refused_before_its_body_is_read_still_gets_its_429(
    pair: Pair, tenant: Tenant, tmp_path: Path
) -> None:
    server = pair.servers[0]
    _, secret = member_key(
        tmp_path, tenant.database_url, "Savers", "editor", "forms:read", "forms:write"
    )
    auth = {"Authorization": f"Bearer {secret}", "X-Forwarded-For": "203.0.113.60"}
    # 900 KB of paragraphs: cheap to check, large enough to count against the
    # organization's allowance of large saves a minute.
    text = [{"type": "paragraph", "text": "Lorem ipsum. " * 150} for _ in range(450)]
    body = {"title": "Long", "blocks": [{"type": "number", "key": "n", "title": "N"}, *text]}

    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        # The whole body is sent every time, as any client does: the refusal
        # must reach it, not a connection reset under its feet.
        answers = [client.post("/v1/forms", headers=auth, json=body) for _ in range(6)]
        after = client.get("/v1/forms", headers=auth)

    codes = [answer.status_code for answer in answers]
    assert codes[0] == 201, codes
    assert codes[-1] == 429, codes
    assert answers[-1].json()["type"] == "/problems/rate-limited"
    assert int(answers[-1].headers["Retry-After"]) >= 1
    # The connection is still good for the next request.
    assert after.status_code == 200
