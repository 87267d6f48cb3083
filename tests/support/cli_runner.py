"""The `formsapi` command (and the client's `formsapi-sync`) run in this
process: its own entry point, with the environment, standard input and
working directory given, its output and exit code captured. A command takes
milliseconds here, against a second and more for a new Python process; tests
about the process itself (the console script, tracebacks, exit codes as a
shell sees them, a run killed or interrupted) still start one.
"""

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from formsapi.cli.main import main
from formsapi.config import get_settings
from formsapi_client._command import sync_tool

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


def _command(entry: Callable[[], None], argv: list[str], code: list[int]) -> Callable[[], None]:
    def command() -> None:
        sys.argv = argv
        try:
            entry()
        except SystemExit as exit_:
            code.append(exit_.code if isinstance(exit_.code, int) else 1)
        except BaseException:
            traceback.print_exc()  # what the process would print, where the test reads it
            code.append(1)

    return command


def run(
    args: list[str], env: Mapping[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """As subprocess.run(["formsapi", *args], ...) would answer, run in-process
    (in a thread of its own: the command's asyncio.run needs no running loop)."""
    out, err = io.StringIO(), io.StringIO()
    code: list[int] = []
    with (
        _ONE_AT_A_TIME,
        _process_state(env, cwd, stdin),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        saved_argv = sys.argv
        thread = threading.Thread(target=_command(main, ["formsapi", *args], code))
        thread.start()
        thread.join()
        sys.argv = saved_argv
    return subprocess.CompletedProcess(args, code[0] if code else 0, out.getvalue(), err.getvalue())


def run_sync_tool(
    args: list[str], env: Mapping[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """As subprocess.run(["formsapi-sync", *args], ...) would answer, run
    in-process, in this thread: the main one, where the tool sets its Ctrl-C
    and SIGTERM handlers, as its process would (this process's own are put
    back after). It needs no event loop: a test's may be running."""
    assert threading.current_thread() is threading.main_thread(), "signals are the main thread's"
    out, err = io.StringIO(), io.StringIO()
    code: list[int] = []
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    with (
        _ONE_AT_A_TIME,
        _process_state(env, cwd, ""),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        saved_argv = sys.argv
        try:
            _command(sync_tool, ["formsapi-sync", *args], code)()
        finally:
            sys.argv = saved_argv
            for number, handler in handlers.items():
                if handler is not None:  # None: set outside Python, left as it is
                    signal.signal(number, handler)
    return subprocess.CompletedProcess(args, code[0] if code else 0, out.getvalue(), err.getvalue())
