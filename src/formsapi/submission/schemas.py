from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import Field

from formsapi.kit.schemas import Schema


class SubmissionOut(Schema):
    id: str = Field(examples=["sub_01jd2xa1b2c3d4e5f6g7h8j9k0"])
    form_id: str
    form_version: int = Field(description="The form version these answers were given to.")
    submitted_at: datetime
    answers: dict[str, str | int | float] = Field(
        description="Answers by question key: strings or numbers, see the form's schema."
    )


class SubmissionDetail(SubmissionOut):
    """A submission with what a sync keeps: when it last changed and where
    that change stands in its form's change feed."""

    updated_at: datetime = Field(description="Its last edit; `submittedAt` until edited.")
    version: int = Field(
        description="1 when submitted, one more per edit. The `ETag` is this number, quoted."
    )
    change_seq: int = Field(description="The number of its latest change in the form's feed.")
    ending: str | None = Field(
        description="The key of the ending the respondent reached (the form's `endings`); "
        "null when the form has none."
    )
    language: str | None = Field(
        default=None,
        description="The language the respondent answered in, one of the form's; answers "
        "are the same (option values, not labels) whatever it was. Null for submissions "
        "made before forms had languages, and absent from their events.",
    )


class SubmissionDeleted(Schema):
    """What the change feed says of a deleted submission: delete it from your copy."""

    id: str
    change_seq: int
    deleted: Literal[True]
    deleted_at: datetime


class Changes(Schema):
    data: list[SubmissionDetail | SubmissionDeleted] = Field(
        description="Changes oldest first, one per submission: its latest state, or a "
        "tombstone if it was deleted."
    )
    next: int = Field(description="The `after` of your next call (also when `data` is empty).")
    has_more: bool = Field(description="More changes are waiting: call again at once.")


def wire(
    id_: str, form_id: str, form_version: int, submitted_at: str, answers: object
) -> dict[str, Any]:
    """A submission as the API lists it (SubmissionOut), built here alone.
    `submitted_at` comes formatted (by the database on the hot read);
    `answers` may be the JSON text as stored, in an orjson.Fragment."""
    return {
        "id": id_,
        "formId": form_id,
        "formVersion": form_version,
        "submittedAt": submitted_at,
        "answers": answers,
    }


def detail_wire(
    id_: str,
    form_id: str,
    form_version: int,
    submitted_at: str,
    updated_at: str,
    version: int,
    change_seq: int,
    answers: object,
    ending: str | None,
    language: str | None,
) -> dict[str, Any]:
    """A submission with its sync fields (SubmissionDetail), built here alone."""
    return {
        "id": id_,
        "formId": form_id,
        "formVersion": form_version,
        "submittedAt": submitted_at,
        "updatedAt": updated_at,
        "version": version,
        "changeSeq": change_seq,
        "answers": answers,
        "ending": ending,
        "language": language,
    }


def deleted_wire(id_: str, change_seq: int, deleted_at: str) -> dict[str, Any]:
    """A tombstone (SubmissionDeleted), built here alone."""
    return {"id": id_, "changeSeq": change_seq, "deleted": True, "deletedAt": deleted_at}


def change_wire(form_id: str, row: Sequence[Any]) -> dict[str, Any]:
    """A row of the change feed's query (repository.ChangeRow) as the feed
    and the export show it: the submission, its answers embedded as stored,
    or its tombstone."""
    id_, form_version, submitted, updated, version, seq, answers, ending, language, deleted, _ = row
    if deleted is not None:
        return deleted_wire(id_, seq, deleted)
    fragment = orjson.Fragment(answers)
    return detail_wire(
        id_, form_id, form_version, submitted, updated, version, seq, fragment, ending, language
    )
