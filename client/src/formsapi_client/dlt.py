"""A dlt source (the `dlt` extra): forms and their submissions loaded into any
destination dlt supports, incrementally on each form's change feed, with
edits merged and deletes applied.

    import dlt
    from formsapi_client.dlt import formsapi_source

    pipeline = dlt.pipeline("formsapi", destination="duckdb", dataset_name="forms")
    pipeline.run(formsapi_source("http://127.0.0.1:8000", api_key))

Each form's feed position lives in the resource's dlt state, which dlt
commits with the load itself: a run that fails or is killed leaves the
positions of the last completed load, and the next run repeats what it had
extracted (merged by id, so nothing is doubled)."""

from collections.abc import Iterator, Sequence
from typing import Any

import dlt
from dlt.sources import DltResource

from formsapi_client import Client, CursorExpired
from formsapi_client.models import FormSummary

PAGE = 1000


@dlt.source(name="formsapi")
def formsapi_source(
    base_url: str = dlt.config.value,
    api_key: str = dlt.secrets.value,
    form_ids: Sequence[str] | None = None,
) -> Iterator[DltResource]:
    """`forms` (each form as the forms list shows it) and `submissions`
    (every live submission of those forms, answers nested as
    `answers__<key>` columns), both merged on `id`. `form_ids`: only these
    forms; by default every form of the key's organization."""

    def chosen(client: Client) -> list[FormSummary]:
        return [form for form in client.forms.iter() if not form_ids or form.id in form_ids]

    @dlt.resource(name="forms", primary_key="id", write_disposition="merge")
    def forms_resource() -> Iterator[list[dict[str, Any]]]:
        with Client(base_url, api_key) as client:
            yield [form.model_dump(mode="json") for form in chosen(client)]

    @dlt.resource(
        name="submissions",
        primary_key="id",
        write_disposition="merge",
        # A tombstone deletes its row; of two states of one submission in a
        # load (edited while it ran), the later change wins.
        columns={"deleted": {"hard_delete": True}, "change_seq": {"dedup_sort": "desc"}},
    )
    def submissions() -> Iterator[list[dict[str, Any]]]:
        positions: dict[str, int] = dlt.current.resource_state().setdefault("positions", {})
        with Client(base_url, api_key) as client:
            for form in chosen(client):
                yield from _changes(client, form.id, positions)

    yield forms_resource
    yield submissions


def _changes(client: Client, form_id: str, positions: dict[str, int]) -> Iterator[list[Any]]:
    """The form's changes after its position, a page at a time, the position
    moved on past each page as it is handed to dlt."""
    after = positions.get(form_id, 0)
    while True:
        try:
            page = client.submissions.changes_json(form_id, after, PAGE)
        except CursorExpired as error:
            raise CursorExpired(
                error.status,
                error.type,
                error.title,
                f"{error.detail} Load this form again from the start: run the pipeline with "
                "refresh='drop_resources' (or `dlt pipeline <name> drop submissions`).",
                error.errors,
                error.invalid_params,
                error.headers,
            ) from error
        rows = [_row(form_id, item) for item in page["data"]]
        if rows:
            yield rows
        after = positions[form_id] = page["next"]
        if not page["hasMore"]:
            return


def _row(form_id: str, item: dict[str, Any]) -> dict[str, Any]:
    if item.get("deleted"):
        tombstone = {"id": item["id"], "form_id": form_id, "change_seq": item["changeSeq"]}
        return {**tombstone, "deleted": True}
    return {
        "id": item["id"],
        "form_id": form_id,
        "form_version": item["formVersion"],
        "submitted_at": item["submittedAt"],
        "updated_at": item["updatedAt"],
        "version": item["version"],
        "change_seq": item["changeSeq"],
        "answers": item["answers"],
        "ending": item.get("ending"),  # the ending reached (a server before endings: none)
        "language": item.get("language"),  # the respondent's (a server before: none)
        "deleted": False,
    }
