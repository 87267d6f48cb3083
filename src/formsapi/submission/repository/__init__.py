"""The SQL of submissions, by what it serves: rows, counts, pages."""

from formsapi.submission.repository.counts import (
    add_counts,
    day_of,
    hour_of,
    hourly_counts,
    insert_counted,
    rebuild_counts,
)
from formsapi.submission.repository.paging import PageRow, list_page, seek, total
from formsapi.submission.repository.rows import (
    ExportRow,
    delete_row,
    export_chunk,
    get,
    recent,
)

__all__ = [
    "ExportRow",
    "PageRow",
    "add_counts",
    "day_of",
    "delete_row",
    "export_chunk",
    "get",
    "hour_of",
    "hourly_counts",
    "insert_counted",
    "list_page",
    "rebuild_counts",
    "recent",
    "seek",
    "total",
]
