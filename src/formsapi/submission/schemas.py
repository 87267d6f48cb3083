from datetime import datetime
from typing import Any

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


def wire(
    id_: str, form_id: str, form_version: int, submitted_at: str, answers: object
) -> dict[str, Any]:
    """A submission as the API sends it (SubmissionOut), built here alone.
    `submitted_at` comes formatted (by the database on the hot read);
    `answers` may be the JSON text as stored, in an orjson.Fragment."""
    return {
        "id": id_,
        "formId": form_id,
        "formVersion": form_version,
        "submittedAt": submitted_at,
        "answers": answers,
    }
