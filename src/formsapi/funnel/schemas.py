"""The funnel as the API documents it (funnel.service builds it)."""

from pydantic import Field

from formsapi.kit.schemas import Schema


class FunnelFilters(Schema):
    since: str | None
    until: str | None
    version: int | None


class FunnelHours(Schema):
    since: str = Field(description="`since` rounded down to its UTC hour.")
    until: str = Field(description="`until` rounded up to a UTC hour.")


class FunnelPage(Schema):
    page: int = Field(description="The page's number in the form, from 1.")
    reached: int = Field(
        description="Respondents whose furthest page went up to it (page 1: the starts)."
    )
    stopped: int = Field(
        description="Of those, the ones for whom it is still the furthest, and who did not send "
        "the form: they dropped off here."
    )
    drop_off_rate: float | None = Field(description="stopped / reached; null when none reached it.")


class Funnel(Schema):
    """The funnel of a form's hosted page: how many respondents took each
    step, counted as they happen (docs/guides/dashboards.md: the funnel)."""

    form_id: str
    version: int = Field(description="The form version whose pages are listed.")
    filters: FunnelFilters
    hours: FunnelHours | None = Field(
        description="The whole UTC hours counted, the range rounded out; null: all time."
    )
    views: int = Field(description="Loads of the hosted page's first page.")
    starts: int = Field(description="Respondents who began answering.")
    completions: int = Field(description="Submissions sent from the hosted page.")
    completion_rate: float | None = Field(description="completions / starts; null with no starts.")
    timed_completions: int = Field(description="Completions whose time to complete is known.")
    median_seconds_to_complete: float | None = Field(
        description="The median time from the first page served to the form sent, in seconds "
        "(whole below 100, two significant digits above, a day at most); null when none."
    )
    pages: list[FunnelPage]
