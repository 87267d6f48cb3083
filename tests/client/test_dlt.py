"""The dlt source loads into a real local destination (SQLite through dlt's
SQLAlchemy destination) from a real server on each engine: a first load,
then edits merged, deletes applied and new rows added by the next."""

from pathlib import Path
from typing import Any

import dlt
import sqlalchemy as sa

from formsapi_client import Client
from formsapi_client.dlt import formsapi_source
from tests.client.conftest import ANSWERS, Live, published_form


def _load(live: Live, form_id: str, directory: Path) -> None:
    pipeline = dlt.pipeline(
        pipeline_name="formsapi_test",
        pipelines_dir=str(directory / "pipelines"),
        destination=dlt.destinations.sqlalchemy(f"sqlite:///{directory / 'loaded.db'}"),
        dataset_name="main",
    )
    pipeline.run(formsapi_source(live.base_url, live.secret, form_ids=[form_id]))


def _loaded(directory: Path) -> dict[str, dict[str, Any]]:
    engine = sa.create_engine(f"sqlite:///{directory / 'loaded.db'}")
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT id, answers__name, version, form_id FROM submissions")
        ).mappings()
        found = {row["id"]: dict(row) for row in rows}
    engine.dispose()
    return found


def test_loads_then_merges_edits_applies_deletes_and_adds_new_rows(
    live: Live, client: Client, tmp_path: Path
) -> None:
    form = published_form(client, "dlt")
    first = [client.submissions.create(form.id, ANSWERS) for _ in range(3)]
    _load(live, form.id, tmp_path)
    assert {id_: row["answers__name"] for id_, row in _loaded(tmp_path).items()} == {
        s.id: "Ada" for s in first
    }

    client.submissions.edit(form.id, first[0].id, {"name": "Grace"})
    client.submissions.delete(form.id, first[1].id)
    added = client.submissions.create(form.id, {**ANSWERS, "name": "Lin"})
    _load(live, form.id, tmp_path)

    loaded = _loaded(tmp_path)
    assert {id_: (row["answers__name"], row["version"]) for id_, row in loaded.items()} == {
        first[0].id: ("Grace", 2),
        first[2].id: ("Ada", 1),
        added.id: ("Lin", 1),
    }
    assert {row["form_id"] for row in loaded.values()} == {form.id}

    _load(live, form.id, tmp_path)  # nothing new: the same rows
    assert _loaded(tmp_path) == loaded


def test_hidden_fields_variables_matrix_rows_and_the_ending_are_loaded(
    live: Live, client: Client, tmp_path: Path
) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "short_text", "key": "name", "title": "Name"},
        {"type": "matrix", "key": "service", "title": "Service",
         "rows": [{"value": "speed", "label": "Fast"}],
         "columns": [{"value": "no", "label": "No"}, {"value": "yes", "label": "Yes"}]},
    ]  # fmt: skip
    logic: dict[str, list[Any]] = {
        "hiddenFields": [{"key": "campaign"}],
        "variables": [{"name": "score", "value": {"length": [{"var": "name"}]}}],
        "endings": [{"key": "thanks", "text": "Thanks"}],
    }
    form = client.forms.create("dlt logic", blocks, logic=logic)
    client.forms.update(form.id, status="published")
    answers = {"name": "Ada", "service.speed": "yes", "campaign": "spring"}
    created = client.submissions.create(form.id, answers)

    _load(live, form.id, tmp_path)

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'loaded.db'}")
    with engine.connect() as connection:
        row = dict(connection.execute(sa.text("SELECT * FROM submissions")).mappings().one())
    engine.dispose()
    loaded = {name: value for name, value in row.items() if value in (
        "Ada", "yes", "spring", 3, "thanks")}  # fmt: skip
    assert row["id"] == created.id
    assert sorted(loaded) == sorted(
        ["answers__name", "answers__service_speed", "answers__campaign", "answers__vars_score",
         "ending"]
    ), row  # fmt: skip
