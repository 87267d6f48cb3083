"""A server of a browser test's own: one organization, its owner (signed in
with tests.support.servers.PASSWORD) and an API key, on a new SQLite database."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import PASSWORD, TLS, Server, clean_env, cli, start_server, stop_servers

OWNER = "owner@example.com"
SCOPES = ("forms:read", "forms:write", "submissions:read")


@dataclass(frozen=True)
class Site:
    server: Server
    database: Path
    secret: str

    @property
    def url(self) -> str:
        return self.server.base_url

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.url}{path}",
            headers={"Authorization": f"Bearer {self.secret}"},
            timeout=10,
            verify=TLS,
            **kwargs,
        )


@contextmanager
def owned_site(
    directory: Path, organization: str, scopes: Sequence[str] = SCOPES, **settings: str
) -> Iterator[Site]:
    """The server, serving `organization` with the FORMSAPI_* `settings`,
    stopped on leaving."""
    path = directory / "formsapi.db"
    database = f"sqlite:///{path}"
    cli(directory, database, "migrate")
    org = cli(directory, database, "org", "create", "--name", organization)
    cli(directory, database, "user", "create", "--email", OWNER, stdin=f"{PASSWORD}\n")
    cli(directory, database, "member", "add", "--org", org, "--email", OWNER, "--role", "owner")
    granted = [arg for scope in scopes for arg in ("--scope", scope)]
    secret = cli(
        directory, database, "key", "create", "--org", org, "--email", OWNER, "--name", "e2e",
        *granted,
    )  # fmt: skip
    server = start_server(directory, clean_env(database_url=database, **settings), "server")
    try:
        server.wait_until_healthy()
        yield Site(server, path, secret)
    finally:
        stop_servers([server])
