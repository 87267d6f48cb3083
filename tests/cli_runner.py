"""The `formsapi` command run in this process: its own entry point, with the
environment, standard input and working directory given, its output and exit
code captured. A command takes milliseconds here, against a second and more
for a new Python process; tests about the process itself (the console script,
tracebacks, exit codes as a shell sees them) still start one.
"""

import contextlib
import io
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

from formsapi.cli.main import main
from formsapi.config import get_settings

_ONE_AT_A_TIME = threading.Lock()  # the environment, cwd and streams are the process's


@contextlib.contextmanager
def _process_state(env: Mapping[str, str], cwd: Path, stdin: str) -> Iterator[None]:
    saved_env, saved_cwd, saved_stdin = dict(os.environ), Path.cwd(), sys.stdin
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.stdin = io.StringIO(stdin)
    get_settings.cache_clear()
    try:
        yield
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        get_settings.cache_clear()


def run(
    args: list[str], env: Mapping[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """As subprocess.run(["formsapi", *args], ...) would answer, run in-process
    (in a thread of its own: the command's asyncio.run needs no running loop)."""
    out, err = io.StringIO(), io.StringIO()
    code: list[int] = []

    def command() -> None:
        sys.argv = ["formsapi", *args]
        try:
            main()
        except SystemExit as exit_:
            code.append(exit_.code if isinstance(exit_.code, int) else 1)
        except BaseException:
            traceback.print_exc()  # what the process would print, where the test reads it
            code.append(1)

    with (
        _ONE_AT_A_TIME,
        _process_state(env, cwd, stdin),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        saved_argv = sys.argv
        thread = threading.Thread(target=command)
        thread.start()
        thread.join()
        sys.argv = saved_argv
    return subprocess.CompletedProcess(args, code[0] if code else 0, out.getvalue(), err.getvalue())
