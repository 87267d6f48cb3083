"""Which reads a summary made: an async function of a module, spied on."""

from typing import Any

import pytest


def calls_to(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[tuple[Any, ...]]:
    """The positional arguments of each call to `module.name` from now on;
    the real function still runs."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(module, name)

    async def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(module, name, spied)
    return calls
