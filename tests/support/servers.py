"""Real `formsapi serve` processes for tests, forked from one that has already
imported the service (tests/support/forks.py), on a free local port, their output in
log files, stopped (killed if need be) at teardown."""

import contextlib
import http.server
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import cli_runner
from tests.support.forks import FORMSAPI, Forked, forkable

PASSWORD = "correct horse battery"
STARTUP_SECONDS = 90  # a busy machine starts a process slowly; a healthy one is quick
# One TLS context for the tests' own plain-HTTP calls to loopback servers:
# httpx otherwise reads the whole CA bundle for each client it makes, 30 ms
# of CPU a call of httpx.get and the like.
TLS = httpx.create_ssl_context()


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without any FORMSAPI_* setting, plus `settings`.
    A browser fills a page in faster than a person: the minimum fill time is
    off unless `settings` names it (tests/spam/test_fill_time.py times it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMSAPI_")}
    env["FORMSAPI_MIN_FILL_SECONDS"] = "0"
    env.update({f"FORMSAPI_{name.upper()}": value for name, value in settings.items()})
    return env


def cli(cwd: Path, database_url: str, *args: str, stdin: str = "", **settings: str) -> str:
    """A management command that must succeed (run in this process); its output."""
    result = cli_runner.run(
        list(args), clean_env(database_url=database_url, **settings), cwd, stdin
    )
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout.strip()


@contextlib.contextmanager
def in_thread(server: http.server.HTTPServer) -> Iterator[int]:
    """`server`, bound on loopback, answering from a thread of this process
    until the block ends; its port."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _holds_listener(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds a socket listening on `port`, read from
    Linux's /proc; None where there is no /proc to read."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        return None
    listeners = set()
    for table in tables:
        with contextlib.suppress(OSError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                    listeners.add(f"socket:[{fields[9]}]")
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # gone already
        return False
    for fd in descriptors:
        with contextlib.suppress(OSError):
            if os.readlink(fd) in listeners:
                return True
    return False


Process = Forked | subprocess.Popen[bytes]


@dataclass
class Server:
    process: Process
    base_url: str
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        with httpx.Client(timeout=1, verify=TLS) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    pytest.fail(f"server exited with {self.process.returncode}:\n{self.stderr}")
                try:
                    if client.get(f"{self.base_url}/healthz").status_code == 200:
                        self._check_listening()
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        pytest.fail(f"server not healthy after {STARTUP_SECONDS} s:\n{self.stderr}")

    def _check_listening(self) -> None:
        """Fail unless the healthy answer came from this server. The port was
        free when free_port() found it, and another process may have bound
        it first: this one then exits, and the tests would talk to a server
        on another database (401s for keys that exist)."""
        port = int(self.base_url.rsplit(":", 1)[1])
        if _holds_listener(self.process.pid, port) is False:
            pytest.fail(f"port {port} is answered by another process:\n{self.stderr}")


def start_server(
    directory: Path,
    env: dict[str, str],
    name: str,
    args: tuple[str, ...] = (),
    *,
    installed: bool = False,
) -> Server:
    """`formsapi serve` on a free port; one worker process unless `args` say
    otherwise (several servers stand for several workers or machines)."""
    port = free_port()
    if "--workers" not in args:
        args = (*args, "--workers", "1")
    argv = ("serve", "--port", str(port), *args)
    process = command(directory, env, name, *argv, installed=installed)
    return Server(process, f"http://127.0.0.1:{port}", directory / f"{name}.err")


def command(
    directory: Path, env: dict[str, str], name: str, *argv: str, installed: bool = False
) -> Process:
    """`formsapi <argv>` in `directory`, its output in `name`.out and .err there:
    forked (tests/support/forks.py), unless `installed` or unless `env` sets more than
    this process's environment and FORMSAPI_* settings (LD_PRELOAD, TZ, ...:
    read when a program is executed, never at a fork); then the console script."""
    out, err = directory / f"{name}.out", directory / f"{name}.err"
    if not installed and forkable(env):
        return Forked(list(argv), directory, env, out, err)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        return subprocess.Popen(
            [str(FORMSAPI), *argv],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
        )


def stop_servers(servers: list[Server]) -> None:
    for server in servers:
        server.process.terminate()
    for server in servers:
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=5)
