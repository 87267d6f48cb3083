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

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

from formsapi import app as service
from formsapi.cli.main import main
from formsapi.config import get_settings

FORMSAPI = Path(sys.executable).parent / "formsapi"

# The fork server imports this module (and so the service) once, when a
# test first starts a command; each command is a fork of it.
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload([__name__])
service.shared_routes()


def _command(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    get_settings.cache_clear()
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [str(FORMSAPI), *argv]
    try:
        main()
    finally:
        # A forked process ends without the interpreter's exit, which would flush.
        sys.stdout.flush()
        sys.stderr.flush()


class Forked:
    """A forked command, with the part of subprocess.Popen's interface that
    the tests use."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], out: Path, err: Path):
        self.args = argv
        self._process = _FORKS.Process(
            target=_command, args=(argv, str(cwd), env, str(out), str(err)), name=argv[0]
        )
        self._process.start()

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

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
