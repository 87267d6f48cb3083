"""`formsapi` commands (`serve`, `worker`) as new processes forked from one
that has already imported the service, as `gunicorn --preload` starts its
workers: most of a new process's start is importing the service and building
its routes, the same work for every server a test starts (bench/RESULTS.md).

A forked command is otherwise the console script's process: its own pid,
`formsapi.cli.main.main` with the given arguments, working directory,
environment and output files, and its signals and exit codes as a shell sees
them. The README's `formsapi serve --demo` (tests/test_server.py) and the
commands of tests/cli/test_cli.py that are about the process still start the
installed console script itself.
"""

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from formsapi import app as service
from formsapi.cli.main import main
from formsapi.config import get_settings

FORMSAPI = Path(sys.executable).parent / "formsapi"

# The fork server imports the migration tool that `serve` imports as it
# starts, then this module (and so the service), once, when a test first
# starts a command; each command is a fork of it.
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["alembic.command", __name__])
service.shared_routes()
# What is built by now is every fork's heap too. Left out of garbage
# collection, a fork's collections (the service's at startup among them) skip
# it, instead of walking it and so copying every page it inherited.
gc.collect()
gc.freeze()


def forkable(env: Mapping[str, str]) -> bool:
    """Whether a fork runs as a new program would with `env`: it differs from
    this process's environment only in FORMSAPI_* settings, which the service
    reads when it runs (and in pytest's name of the test running). Others
    (LD_PRELOAD, TZ, PYTHON*, locales) take effect when a program is executed."""
    differing = {k for k in env.keys() | os.environ.keys() if env.get(k) != os.environ.get(k)}
    return all(k.startswith("FORMSAPI_") or k == "PYTEST_CURRENT_TEST" for k in differing)


def _command(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    for fd, path in ((1, out), (2, err)):  # first: what goes wrong next is in the files
        opened = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    get_settings.cache_clear()
    sys.argv = [str(FORMSAPI), *argv]
    main()  # multiprocessing flushes stdout and stderr as the process ends


class Forked:
    """A forked command, with the part of subprocess.Popen's interface that
    the tests use."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], out: Path, err: Path):
        self.args = [str(FORMSAPI), *argv]
        for path in (out, err):  # there, even if the fork fails before it writes
            path.write_bytes(b"")
        self._process = _FORKS.Process(
            target=_command, args=(argv, str(cwd), env, str(out), str(err)), name=argv[0]
        )
        self._process.start()
        _STARTED.append(self)

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # never a pid that has been reaped, maybe reused
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_STARTED: list[Forked] = []


def kill_left_running() -> None:
    """Kill what a test left running: multiprocessing would wait for it when
    this process exits, and the run would never end."""
    for forked in _STARTED:
        forked.kill()
    for forked in _STARTED:
        forked.wait(10)
    _STARTED.clear()
