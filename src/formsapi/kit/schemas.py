"""Pydantic base for API I/O: camelCase on the wire, snake_case in Python."""

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Schema(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, from_attributes=True, extra="forbid"
    )


def _clean_text(value: str) -> str:
    # PostgreSQL refuses NUL in text and JSONB, and no encoding takes unpaired
    # surrogates: refuse both here, as a 422, rather than at the database.
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text") from None
    return value


CleanStr = Annotated[str, AfterValidator(_clean_text)]
