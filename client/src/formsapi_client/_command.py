"""The `formsapi-sync` command's entry point. The command is installed with
the client, but what it runs needs the `sync` extra: without it, one line
that says what to install, not an ImportError's traceback."""

import sys

# The top-level packages the `sync` extra installs.
EXTRA = frozenset({"sqlalchemy", "rich", "typer", "psycopg", "orjson"})


def sync_tool() -> None:
    try:
        from formsapi_client.sync.cli import main  # only here: it needs the extra
    except ImportError as error:
        if (error.name or "").split(".")[0] not in EXTRA:
            raise  # not a missing package of the extra: a real error, shown as one
        sys.stderr.write(
            f"formsapi-sync: it needs the client's sync extra ({error.name} is missing): "
            "pip install 'formsapi-client[sync]'\n"
        )
        raise SystemExit(2) from None
    main()
