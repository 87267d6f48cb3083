from datetime import date
from typing import Literal

from pydantic import Field

from formsapi.kit.schemas import Schema

RefusalReason = Literal[
    "honeypot",
    "too-fast",
    "challenge-missing",
    "challenge-invalid",
    "challenge-expired",
    "challenge-replayed",
    "rate-limited-ip",
    "rate-limited-form",
]


class RefusalCount(Schema):
    day: date = Field(description="The UTC date.")
    reason: RefusalReason = Field(
        description="honeypot: the hidden field bots fill in was filled; too-fast: sent sooner "
        "after the page was served than a person fills it; challenge-missing, -invalid, "
        "-expired, -replayed: the proof-of-work challenge was not solved, forged or another "
        "form's, solved too long ago, or already spent; rate-limited-ip, rate-limited-form: "
        "past the posts a minute one address, or all together, may send the form."
    )
    count: int = Field(description="Posts refused for this reason on this day.")


class RefusalCounts(Schema):
    """Posts to the form's hosted page refused as spam. None of them was
    stored, sent to the feed or to webhooks: these counts are all that is
    kept, so a false positive can be noticed."""

    data: list[RefusalCount] = Field(description="Newest day first; days without one left out.")
