"""`formsapi-sync`: a form's submissions, several forms' or a whole
organization's, copied into SQLite or PostgreSQL and kept up to date."""

import os
import signal
import threading
from types import FrameType
from typing import Annotated, NoReturn

import psycopg
import typer
from sqlalchemy.exc import SQLAlchemyError

from formsapi_client import (
    ApiError,
    Client,
    ConnectionFailed,
    Forbidden,
    RateLimited,
    ServerError,
    Unauthorized,
    UnreadableResponse,
)
from formsapi_client._core import shown_url
from formsapi_client.sync.runner import NoSuchForm, Outcome, Sync, plain_console
from formsapi_client.sync.store import Store, TargetBusy

KEY_VARIABLE = "FORMSAPI_API_KEY"
# Exit statuses, also in the README.
USAGE, SERVER, DATABASE, BUSY, API = 2, 3, 4, 5, 1

out = plain_console()
err = plain_console(stderr=True)
# A bug's traceback never shows local variables: one of them is the key.
app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_show_locals=False)


@app.command(
    help="Copy forms' submissions into SQLite or PostgreSQL, one table per form, and keep "
    f"the copy exact by following each form's change feed. The API key is read from "
    f"{KEY_VARIABLE} (never an option: other users can read a command line)."
)
def sync(
    to: Annotated[
        str,
        typer.Option(
            "--to", help="Where to copy: sqlite:///copy.db or postgresql://user@host/database."
        ),
    ],
    form: Annotated[
        list[str] | None,
        typer.Option("--form", help="A form id; repeat for several. Default: every form."),
    ] = None,
    url: Annotated[
        str,
        typer.Option("--url", envvar="FORMSAPI_URL", help="The formsapi server."),
    ] = "http://127.0.0.1:8000",
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep going: poll for changes until Ctrl-C.")
    ] = False,
    longest_wait: Annotated[
        float,
        typer.Option(help="With --watch: the longest wait between polls, in seconds.", min=1),
    ] = 30.0,
) -> None:
    key = os.environ.get(KEY_VARIABLE, "").strip()
    if not key:
        _fail(
            USAGE,
            f"Set {KEY_VARIABLE} to an API key with the forms:read and submissions:read "
            "scopes (made in the settings area, API keys).",
        )
    try:
        client = Client(url, key, max_retries=3)
    except ValueError as error:
        _fail(USAGE, f"--url: {error}")
    try:
        store = Store(to)
    except TargetBusy as error:
        client.close()
        _fail(BUSY, f"{error} This run leaves the copy to it.")
    except (SQLAlchemyError, ValueError) as error:
        client.close()
        _fail(DATABASE, f"The database at {shown_url(to)} refused: {_reason(error)}")
    stop = threading.Event()
    _stop_on_signals(stop)
    runner = Sync(client, store, console=err, stop=stop)
    try:
        if watch:
            _watch(runner, form, longest_wait)
        else:
            for outcome in runner.once(form):
                out.print(outcome.line())
    except NoSuchForm as error:
        _fail(USAGE, str(error))
    except TargetBusy as error:
        _fail(BUSY, str(error))
    except (Unauthorized, Forbidden) as error:
        _fail(
            USAGE,
            f"The server refused the API key in {KEY_VARIABLE} ({error.status}): {error.detail}",
        )
    except ConnectionFailed as error:
        _fail(SERVER, f"Cannot reach the server at {url}: {error}")
    except ApiError as error:
        _fail(API, f"The server answered {error.status} {error.title}: {error.detail}")
    except (SQLAlchemyError, psycopg.Error) as error:  # psycopg's own: the COPY
        _fail(DATABASE, f"The database at {store.where} refused: {_reason(error)}")
    except UnreadableResponse as error:
        _fail(API, f"The server at {url} sent a response this tool cannot read: {error}.")
    finally:
        client.close()
        store.close()
    if stop.is_set():
        err.print("Stopped between pages: the next run goes on from there.")


def _watch(runner: Sync, forms: list[str] | None, longest_wait: float) -> None:
    """Pass after pass; a server that is down or failing is waited for, not
    given up on."""
    wait = 1.0
    while not runner.stop.is_set():
        try:
            for outcomes in runner.watch(forms, longest_wait=longest_wait):
                _print_changed(outcomes)
                wait = 1.0
        except (ConnectionFailed, ServerError, RateLimited) as error:
            # A 429 the client's retries did not outlast: as long as it asks.
            asked = error.retry_after if isinstance(error, RateLimited) else None
            pause = max(wait, asked or 0.0)
            err.print(f"{error}; trying again in {pause:.0f} s.")
            runner.stop.wait(pause)
            wait = min(wait * 2, longest_wait)


def _print_changed(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        if outcome.changed:
            out.print(outcome.line())


def _stop_on_signals(stop: threading.Event) -> None:
    """Ctrl-C (or SIGTERM) stops between pages; a second one at once (the
    page being written is rolled back, so that is safe too)."""

    def handle(signum: int, _: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        # Not through rich: the signal may land inside one of its own calls
        # (even mid-import), which it cannot be entered again from.
        os.write(2, b"Stopping after this page (Ctrl-C again to stop at once).\n")

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def _reason(error: BaseException) -> str:
    original = getattr(error, "orig", None) or error
    return str(original).strip().splitlines()[0] if str(original).strip() else type(error).__name__


def _fail(status: int, message: str) -> NoReturn:
    err.print(f"formsapi-sync: {message}")
    raise typer.Exit(status)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("Stopped.")
        raise SystemExit(130) from None
