"""The answer summary as the API documents it (summary.figures builds it)."""

from pydantic import Field

from formsapi.kit.schemas import Schema

Number = int | float


class OptionCount(Schema):
    value: str
    label: str | None = None
    count: int = Field(description="Submissions that chose it.")


class ValueCount(Schema):
    value: Number
    count: int


class RankedOption(Schema):
    value: str
    label: str
    mean_rank: float | None = Field(description="Its mean position, 1 the most preferred.")
    first: int = Field(description="Submissions that ranked it first.")


class MatrixRowSummary(Schema):
    value: str
    label: str
    answered: int
    columns: list[OptionCount]


class NpsFigures(Schema):
    score: float | None = Field(
        description="Promoters' share minus detractors', in points (-100 to 100)."
    )
    promoters: int = Field(description="Answers of 9 or 10.")
    passives: int = Field(description="Answers of 7 or 8.")
    detractors: int = Field(description="Answers of 0 to 6.")


QUANTILES_DESCRIPTION = (
    "p10, p25, p50, p75 and p90, each interpolated linearly between the two nearest "
    "answers (as PostgreSQL's percentile_cont)."
)


class QuestionSummary(Schema):
    """One question's figures: `answered` and `skipped` for every type, and
    what fits its type: `options` (choices, dropdowns, yes/no), `ranks` (rankings),
    `distribution`, `mean` and `median` (ratings, scales, NPS), `nps`,
    `min`/`max`/`mean`/`sum`/`quantiles` (numbers), `rows` (matrices)."""

    key: str
    type: str
    title: str
    answered: int = Field(description="Submissions that answered it.")
    skipped: int = Field(description="Submissions that did not (hidden by logic or left out).")
    options: list[OptionCount] | None = None
    ranks: list[RankedOption] | None = None
    distribution: list[ValueCount] | None = None
    mean: float | None = None
    median: float | None = None
    nps: NpsFigures | None = None
    min: Number | None = None
    max: Number | None = None
    sum: Number | None = None
    quantiles: dict[str, float | None] | None = Field(
        default=None, description=QUANTILES_DESCRIPTION
    )
    rows: list[MatrixRowSummary] | None = None


class VariableValueCount(Schema):
    value: Number | str
    count: int


class VariableSummary(Schema):
    name: str
    type: str
    distribution: list[VariableValueCount] = Field(
        description="Submissions per value: at most 200 values, the most frequent."
    )
    distinct_values: int
    min: Number | None = None
    max: Number | None = None
    mean: float | None = None
    sum: Number | None = None
    quantiles: dict[str, float | None] | None = Field(
        default=None, description=QUANTILES_DESCRIPTION
    )


class EndingCount(Schema):
    key: str
    title: str | None
    count: int = Field(description="Submissions that reached it.")


class SummaryFilters(Schema):
    since: str | None
    until: str | None
    version: int | None
    hidden: str | None
    answer: str | None


class FormAnswerSummary(Schema):
    form_id: str
    version: int = Field(description="The form version whose questions are summarized.")
    filters: SummaryFilters
    submissions: int = Field(description="Submissions the filters match.")
    questions: list[QuestionSummary]
    variables: list[VariableSummary]
    endings: list[EndingCount]


class FollowedQuestion(Schema):
    key: str
    type: str
    title: str


class Bucket(Schema):
    start: str = Field(description="The bucket's first moment, in the series' time zone.")
    end: str = Field(description="The next bucket's first moment (this one's end, excluded).")
    submissions: int
    answered: int | None = Field(default=None, description="With `question`: its answers.")
    options: list[OptionCount] | None = Field(
        default=None, description="With a choice or yes/no `question`: each option's count."
    )
    mean: float | None = Field(
        default=None, description="With a rating, scale, NPS or number `question`: the mean."
    )


class TimeSeries(Schema):
    form_id: str
    interval: str
    time_zone: str
    question: FollowedQuestion | None
    buckets: list[Bucket] = Field(description="Every bucket of the range, empty ones included.")
