from datetime import datetime

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
