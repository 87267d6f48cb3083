"""Prefixed, time-ordered identifiers: `frm_01J...` reads as a form id in any log."""

from ulid import ULID


def new_id(prefix: str) -> str:
    # ULIDs sort by creation time, which keeps B-tree inserts append-only.
    return f"{prefix}_{str(ULID()).lower()}"
