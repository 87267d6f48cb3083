"""Prefixed, time-ordered identifiers: `frm_01J...` reads as a form id in any log."""

import re

from ulid import ULID

# What any id of ours can look like; anything else cannot name a row. Checking
# first keeps bytes PostgreSQL rejects (NUL) away from the database.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"  # for OpenAPI and pydantic: $ is the very end there
_PLAUSIBLE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_id(prefix: str) -> str:
    # ULIDs sort by creation time, which keeps B-tree inserts append-only.
    return f"{prefix}_{str(ULID()).lower()}"


def is_plausible(value: str) -> bool:
    return _PLAUSIBLE.fullmatch(value) is not None
