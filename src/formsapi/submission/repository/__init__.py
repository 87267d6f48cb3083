"""The SQL of submissions, by what it serves: rows, counts, pages."""

from formsapi.submission.repository.changes import (
    ROW_CHANGE_SEQ,
    ChangeRow,
    bury,
    changes_after,
    edit,
    live_between,
    positions,
    purge_tombstones,
)
from formsapi.submission.repository.counts import (
    add_counts,
    day_of,
    hour_of,
    hourly_counts,
    new_row,
    rebuild_counts,
)
from formsapi.submission.repository.created import created_parameters, created_statement
from formsapi.submission.repository.paging import PageRow, list_page, seek, total
from formsapi.submission.repository.rows import Deleted, delete_rows, get, recent, submitted_before
from formsapi.submission.repository.tallies import (
    Tally,
    add_tally,
    drop_emptied,
    rebuild_tallies,
    tally,
    tally_arrays,
)

__all__ = [
    "ROW_CHANGE_SEQ",
    "ChangeRow",
    "Deleted",
    "PageRow",
    "Tally",
    "add_counts",
    "add_tally",
    "bury",
    "changes_after",
    "created_parameters",
    "created_statement",
    "day_of",
    "delete_rows",
    "drop_emptied",
    "edit",
    "get",
    "hour_of",
    "hourly_counts",
    "list_page",
    "live_between",
    "new_row",
    "positions",
    "purge_tombstones",
    "rebuild_counts",
    "rebuild_tallies",
    "recent",
    "seek",
    "submitted_before",
    "tally",
    "tally_arrays",
    "total",
]
