"""The `formsapi` command's entry point: the command line, and for `serve`
the service, imported with the cyclic garbage collector paused.

An import builds objects that live as long as the process, hundreds of
thousands of them; the collector, run every few hundred allocations, walks
them again and again while they are made and frees next to nothing (a third
of the CPU of importing the service, bench/RESULTS.md). What the imports
built is then left out of later collections, as a forked server's is
(gc.freeze): the couple of thousand objects of garbage among them, about a
megabyte, are kept with the rest rather than looked for by a full collection
(a quarter of a second) at every start."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def uncollected() -> Iterator[None]:
    """Imports made inside run uncollected, and what they built is frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()


def main() -> None:
    with uncollected():
        from formsapi.cli.main import main as run
    run()
