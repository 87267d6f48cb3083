"""The API's request and response bodies: camelCase on the wire, snake_case in
Python. Written by hand, kept equal to the service's `/v1/openapi.json` by
`tests/client/test_contract.py`.

Response models ignore fields they do not know, and open sets (event types,
statuses) are plain strings, so a newer server with more of them does not
break this client; a block of a type this client does not know reads as an
`UnknownBlock` that keeps all of its fields.
"""

from datetime import date, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter
from pydantic.alias_generators import to_camel

T = TypeVar("T")

FormStatus = Literal["draft", "published", "closed", "archived"]
EventType = Literal[
    "submission.created",
    "submission.updated",
    "submission.deleted",
    "form.created",
    "form.updated",
    "form.status_changed",
    "form.deleted",
    "webhook_endpoint.disabled",
    "ping",
]
QuotaAction = Literal["closeOption", "endForm"]
DeliveryStatus = Literal["pending", "succeeded", "failed"]
# Every answer is a string or a number (multiple choice: values joined by commas).
Answer = str | int | float


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class _Open(Model):
    """Keeps fields this client does not know, and sends them back as given."""

    model_config = ConfigDict(extra="allow")


class Pagination(Model):
    page: int
    limit: int
    total: int


class _Page(Model, Generic[T]):
    data: list[T]
    pagination: Pagination


# Blocks: the questions and layout of a form. Settings left out are None and
# are not sent.


class Option(_Open):
    value: str
    label: str


# A JSON Logic rule (the README's rule language).
Rule = Any


class _Question(_Open):
    key: str
    title: str
    description: str | None = None
    required: bool = False
    visible_if: Rule = None
    required_if: Rule = None
    prefill: bool | None = None


class ShortText(_Question):
    type: Literal["short_text"] = "short_text"
    min_length: int | None = None
    max_length: int | None = None
    placeholder: str | None = None
    pattern: str | None = None
    pattern_message: str | None = None


class LongText(_Question):
    type: Literal["long_text"] = "long_text"
    min_length: int | None = None
    max_length: int | None = None
    placeholder: str | None = None


class Email(_Question):
    type: Literal["email"] = "email"
    placeholder: str | None = None


class Url(_Question):
    type: Literal["url"] = "url"
    placeholder: str | None = None


class Phone(_Question):
    type: Literal["phone"] = "phone"
    placeholder: str | None = None


class Number(_Question):
    type: Literal["number"] = "number"
    min: int | float | None = None
    max: int | float | None = None
    integer: bool = False
    step: int | float | None = None
    unit: str | None = None


class Rating(_Question):
    type: Literal["rating"] = "rating"
    scale: int = 5


Shuffle = Literal["none", "all", "all_but_last"]


class SingleChoice(_Question):
    type: Literal["single_choice"] = "single_choice"
    options: list[Option]
    shuffle: Shuffle | None = None
    allow_other: bool | None = None  # an Other choice; its text under key_other


class MultipleChoice(_Question):
    type: Literal["multiple_choice"] = "multiple_choice"
    options: list[Option]
    shuffle: Shuffle | None = None
    allow_other: bool | None = None
    min_selections: int | None = None
    max_selections: int | None = None


class Dropdown(_Question):
    type: Literal["dropdown"] = "dropdown"
    options: list[Option]
    shuffle: Shuffle | None = None
    allow_other: bool | None = None


class Ranking(_Question):
    type: Literal["ranking"] = "ranking"
    options: list[Option]
    shuffle: Shuffle | None = None
    allow_other: bool | None = None  # refused by the server: a ranking has no Other


class Row(_Open):
    value: str
    label: str


class Matrix(_Question):
    """Rows rated on one scale: each row answers under `key.row`."""

    type: Literal["matrix"] = "matrix"
    rows: list[Row]
    columns: list[Option]
    shuffle: Shuffle | None = None


class Date(_Question):
    type: Literal["date"] = "date"
    min: str | None = None  # YYYY-MM-DD
    max: str | None = None


class Time(_Question):
    type: Literal["time"] = "time"


class DateTime(_Question):
    type: Literal["date_time"] = "date_time"


class YesNo(_Question):
    type: Literal["yes_no"] = "yes_no"


class Nps(_Question):
    type: Literal["nps"] = "nps"
    min_label: str | None = None
    max_label: str | None = None


class Scale(_Question):
    type: Literal["scale"] = "scale"
    min_label: str | None = None
    max_label: str | None = None
    min: int = 1
    max: int = 5


class FileUpload(_Question):
    """Files uploaded first (`client.files.upload`), then named by the
    answer: their ids joined by commas. `accept` lists the types allowed
    (`application/pdf`, `image/*`), judged from the bytes; None: any."""

    type: Literal["file"] = "file"
    max_size: int = 10 * 1024**2  # bytes per file; the server's own limit applies too
    max_files: int = 1
    accept: list[str] | None = None


class Heading(_Open):
    type: Literal["heading"] = "heading"
    text: str
    visible_if: Rule = None


class Paragraph(_Open):
    type: Literal["paragraph"] = "paragraph"
    text: str
    visible_if: Rule = None


class PageBreak(_Open):
    type: Literal["page_break"] = "page_break"
    key: str | None = None
    visible_if: Rule = None


class UnknownBlock(_Open):
    """A block of a type newer than this client: every field is kept."""

    type: str


BLOCK_TYPES: dict[str, type[_Open]] = {
    "short_text": ShortText,
    "long_text": LongText,
    "email": Email,
    "url": Url,
    "phone": Phone,
    "number": Number,
    "rating": Rating,
    "single_choice": SingleChoice,
    "multiple_choice": MultipleChoice,
    "date": Date,
    "time": Time,
    "date_time": DateTime,
    "yes_no": YesNo,
    "nps": Nps,
    "scale": Scale,
    "dropdown": Dropdown,
    "ranking": Ranking,
    "matrix": Matrix,
    "file": FileUpload,
    "heading": Heading,
    "paragraph": Paragraph,
    "page_break": PageBreak,
}


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in BLOCK_TYPES else "unknown"


Block = Annotated[
    Annotated[ShortText, Tag("short_text")]
    | Annotated[LongText, Tag("long_text")]
    | Annotated[Email, Tag("email")]
    | Annotated[Url, Tag("url")]
    | Annotated[Phone, Tag("phone")]
    | Annotated[Number, Tag("number")]
    | Annotated[Rating, Tag("rating")]
    | Annotated[SingleChoice, Tag("single_choice")]
    | Annotated[MultipleChoice, Tag("multiple_choice")]
    | Annotated[Date, Tag("date")]
    | Annotated[Time, Tag("time")]
    | Annotated[DateTime, Tag("date_time")]
    | Annotated[YesNo, Tag("yes_no")]
    | Annotated[Nps, Tag("nps")]
    | Annotated[Scale, Tag("scale")]
    | Annotated[Dropdown, Tag("dropdown")]
    | Annotated[Ranking, Tag("ranking")]
    | Annotated[Matrix, Tag("matrix")]
    | Annotated[FileUpload, Tag("file")]
    | Annotated[Heading, Tag("heading")]
    | Annotated[Paragraph, Tag("paragraph")]
    | Annotated[PageBreak, Tag("page_break")]
    | Annotated[UnknownBlock, Tag("unknown")],
    Discriminator(_block_tag),
]
BlockList: TypeAdapter[list[Block]] = TypeAdapter(list[Block])


# Forms


class FormSummary(Model):
    id: str
    title: str
    slug: str
    status: str  # FormStatus; a plain string so a new status reads too
    response_count: int
    created_at: datetime
    change_seq: int


# The form's logic beside its blocks.


class HiddenField(_Open):
    key: str
    label: str | None = None


class Variable(_Open):
    name: str
    type: Literal["number", "text"] = "number"
    initial: str | int | float | None = None
    value: Rule = None


class SetAction(_Open):
    set: str
    to: Rule


class JumpAction(_Open):
    jump: str
    after: str | None = None


class LogicRule(_Open):
    if_: Rule = Field(default=True, alias="if")
    then: list[SetAction | JumpAction]


class Ending(_Open):
    key: str
    title: str | None = None
    text: str | None = None
    redirect: str | None = None


class BlockTexts(Model):
    """A block's texts in another language; lists' labels by value."""

    title: str | None = None
    description: str | None = None
    placeholder: str | None = None
    text: str | None = None
    min_label: str | None = None
    max_label: str | None = None
    options: dict[str, str] = Field(default_factory=dict)
    rows: dict[str, str] = Field(default_factory=dict)
    columns: dict[str, str] = Field(default_factory=dict)


class EndingTexts(Model):
    title: str | None = None
    text: str | None = None


class Translation(Model):
    """A form's texts in one language: blocks by question key (or position
    for headings and paragraphs), endings by key, the hosted page's words."""

    title: str | None = None
    blocks: dict[str, BlockTexts] = Field(default_factory=dict)
    endings: dict[str, EndingTexts] = Field(default_factory=dict)
    messages: dict[str, str] = Field(default_factory=dict)


class Quota(Model):
    """Places for one option of a single-choice or dropdown question."""

    question: str  # the question's key
    option: str  # the option's value
    limit: int
    # closeOption: shown as full, answers choosing it refused (422);
    # endForm: those who choose it get `message`, nothing stored (409 quota-full)
    action: QuotaAction = "closeOption"
    message: str | None = None


class QuotaState(Quota):
    remaining: int  # places left


class OneResponse(Model):
    """One response per respondent: by a signed "cookie", the "email" answer
    to `question`, the "ip" address once per `hours`, or single-use
    "invitation" links (what each can and cannot stop: the README)."""

    by: Literal["cookie", "email", "ip", "invitation"]
    question: str | None = None
    hours: int | None = None


class FormDetail(FormSummary):
    updated_at: datetime
    version: int
    blocks: list[Block]
    hidden_fields: list[HiddenField]
    variables: list[Variable]
    logic: list[LogicRule]
    endings: list[Ending]
    language: str
    languages: list[str]
    translations: dict[str, Translation]
    missing_translations: dict[str, list[str]]
    content_language: str  # the language of this response's texts
    messages: dict[str, str]
    resume_days: int
    # The sites that may frame its hosted page; None: the organization's list.
    embed_origins: list[str] | None
    challenge: bool  # its hosted page asks for a proof of work before taking answers
    # Days its submissions are kept before being deleted; None: until deleted.
    retention_days: int | None
    opens_at: datetime | None  # it waits closed until then; cleared once open
    closes_at: datetime | None
    max_submissions: int | None  # the submission that reaches it closes the form
    message_before_opening: str | None
    message_after_closing: str | None
    quotas: list[QuotaState]
    # One response per respondent, and how they are known; None: no limit.
    one_response: OneResponse | None
    password_required: bool  # its hosted page asks for a password first
    answers_schema: dict[str, Any] = Field(alias="schema")


class FormsPage(_Page[FormSummary]):
    pass


# Single-use invitation links (/v1/forms/{formId}/invitations).


class Recipient(Model):
    email: str | None = None  # into the form's hidden field `email`, if it has one
    label: str | None = None  # into its hidden field `label`


class InvitationCreate(Model):
    count: int | None = None  # links for no one in particular, or:
    recipients: list[Recipient] | None = None  # a link each


class Invitation(Model):
    id: str
    email: str | None
    label: str | None
    status: Literal["open", "used", "revoked"]
    created_at: datetime
    used_at: datetime | None
    revoked_at: datetime | None


class InvitationMade(Invitation):
    token: str  # shown once
    url: str  # the link to send


class InvitationsMade(Model):
    data: list[InvitationMade]


class InvitationsPage(_Page[Invitation]):
    pass


# Answer summaries (GET /v1/forms/{formId}/summary).

SummaryNumber = int | float


class OptionCount(Model):
    value: str
    label: str | None = None
    count: int


class ValueCount(Model):
    value: SummaryNumber
    count: int


class RankedOption(Model):
    value: str
    label: str
    mean_rank: float | None  # 1 is the most preferred
    first: int


class MatrixRowSummary(Model):
    value: str
    label: str
    answered: int
    columns: list[OptionCount]


class NpsFigures(Model):
    score: float | None
    promoters: int
    passives: int
    detractors: int


class QuestionSummary(Model):
    """One question's figures; the fields beside `answered` and `skipped`
    are those of its type, the others None."""

    key: str
    type: str
    title: str
    answered: int
    skipped: int
    options: list[OptionCount] | None = None
    ranks: list[RankedOption] | None = None
    distribution: list[ValueCount] | None = None
    mean: float | None = None
    median: float | None = None
    nps: NpsFigures | None = None
    min: SummaryNumber | None = None
    max: SummaryNumber | None = None
    sum: SummaryNumber | None = None
    quantiles: dict[str, float | None] | None = None
    rows: list[MatrixRowSummary] | None = None


class VariableValueCount(Model):
    value: SummaryNumber | str
    count: int


class VariableSummary(Model):
    name: str
    type: str
    distribution: list[VariableValueCount]
    distinct_values: int
    min: SummaryNumber | None = None
    max: SummaryNumber | None = None
    mean: float | None = None
    sum: SummaryNumber | None = None
    quantiles: dict[str, float | None] | None = None


class EndingCount(Model):
    key: str
    title: str | None
    count: int


class SummaryFilters(Model):
    since: str | None
    until: str | None
    version: int | None
    hidden: str | None
    answer: str | None


class FollowedQuestion(Model):
    key: str
    type: str
    title: str


class Bucket(Model):
    start: str  # in the series' time zone, with its offset
    end: str
    submissions: int
    answered: int | None = None
    options: list[OptionCount] | None = None
    mean: float | None = None


class TimeSeries(Model):
    form_id: str
    interval: str
    time_zone: str
    question: FollowedQuestion | None
    buckets: list[Bucket]


class FunnelFilters(Model):
    since: str | None
    until: str | None
    version: int | None


class FunnelHours(Model):
    since: str  # `since` rounded down to its UTC hour
    until: str  # `until` rounded up to a UTC hour


class FunnelPage(Model):
    page: int  # from 1
    reached: int  # respondents whose furthest page went up to it (page 1: the starts)
    stopped: int  # of those, the ones still there who did not send the form
    drop_off_rate: float | None  # stopped / reached


class Funnel(Model):
    """The funnel of a form's hosted page (views, starts, completions, each
    page's drop-off), of the respondents first served in the range's hours."""

    form_id: str
    version: int
    filters: FunnelFilters
    hours: FunnelHours | None  # the whole UTC hours counted; None: all time
    views: int
    starts: int
    completions: int
    completion_rate: float | None
    timed_completions: int
    median_seconds_to_complete: float | None
    pages: list[FunnelPage]


# Posts refused as spam (GET /v1/forms/{formId}/refusals).


class RefusalCount(Model):
    day: date  # UTC
    # honeypot, too-fast, challenge-missing, challenge-invalid, challenge-expired,
    # challenge-replayed, rate-limited-ip or rate-limited-form
    reason: str
    count: int


class RefusalCounts(Model):
    data: list[RefusalCount]  # newest day first


class FormAnswerSummary(Model):
    form_id: str
    version: int
    filters: SummaryFilters
    submissions: int
    questions: list[QuestionSummary]
    variables: list[VariableSummary]
    endings: list[EndingCount]


class FormCreate(Model):
    title: str
    slug: str | None = None
    blocks: list[Block] | None = None
    hidden_fields: list[HiddenField] | None = None
    variables: list[Variable] | None = None
    logic: list[LogicRule] | None = None
    endings: list[Ending] | None = None
    language: str | None = None
    translations: dict[str, Translation] | None = None
    messages: dict[str, str] | None = None
    resume_days: int | None = None
    embed_origins: list[str] | None = None  # None: the organization's list
    challenge: bool | None = None  # None: off
    retention_days: int | None = None  # None: kept until deleted
    opens_at: datetime | None = None
    closes_at: datetime | None = None
    max_submissions: int | None = None
    message_before_opening: str | None = None
    message_after_closing: str | None = None
    quotas: list[Quota] | None = None
    one_response: OneResponse | None = None  # None: no limit
    password: str | None = None  # None: none asked


class FormUpdate(Model):
    title: str | None = None
    slug: str | None = None
    blocks: list[Block] | None = None
    hidden_fields: list[HiddenField] | None = None
    variables: list[Variable] | None = None
    logic: list[LogicRule] | None = None
    endings: list[Ending] | None = None
    language: str | None = None
    translations: dict[str, Translation] | None = None
    messages: dict[str, str] | None = None
    resume_days: int | None = None
    # None is not sent (unchanged); back to the organization's list is a null,
    # which these models never send.
    embed_origins: list[str] | None = None
    challenge: bool | None = None
    # None is not sent (unchanged); back to keeping them until deleted is a
    # null, which these models never send.
    retention_days: int | None = None
    # None is not sent (unchanged); clearing one is a null, which these models never send.
    opens_at: datetime | None = None
    closes_at: datetime | None = None
    max_submissions: int | None = None
    message_before_opening: str | None = None
    message_after_closing: str | None = None
    quotas: list[Quota] | None = None
    # None is not sent (unchanged); taking the limit or the password away is
    # a null, which these models never send.
    one_response: OneResponse | None = None
    password: str | None = None
    status: FormStatus | None = None


# Submissions


class Submission(Model):
    id: str
    form_id: str
    form_version: int
    submitted_at: datetime
    answers: dict[str, Answer]


class SubmissionDetail(Submission):
    updated_at: datetime
    version: int  # the ETag, unquoted
    change_seq: int
    ending: str | None  # the key of the ending reached, or None
    # The language the respondent answered in (None: a submission, or an
    # event, from before forms had languages).
    language: str | None = None


class SubmissionDeleted(Model):
    id: str
    change_seq: int
    deleted: Literal[True]
    deleted_at: datetime


class SubmissionsPage(_Page[Submission]):
    pass


class Partial(Model):
    """A respondent on their way through a form with pages."""

    id: str
    started_at: datetime
    updated_at: datetime
    expires_at: datetime
    last_page: int  # the furthest page reached, from 1
    answers: dict[str, Answer] | None = None  # with submissions:read


class PartialsPage(_Page[Partial]):
    pass


# One respondent's data across the organization (POST /v1/respondents/export and /erase).


class RespondentQuery(Model):
    """Whom to find: `email`, or `field` (a hidden field's key) and `value`."""

    email: str | None = None
    field: str | None = None
    value: str | None = None


class RespondentPartial(Model):
    """A partial response found by person, with the form it belongs to."""

    id: str
    form_id: str
    started_at: datetime
    updated_at: datetime
    expires_at: datetime
    last_page: int  # the furthest page reached, from 1
    answers: dict[str, Answer]


class RespondentData(Model):
    submissions: list[SubmissionDetail]  # in every form, oldest first
    partials: list[RespondentPartial]  # not completed
    complete: bool  # False: more matched than one request returns


class RespondentErased(Model):
    submissions: int  # deleted
    partials: int  # deleted
    more: bool  # True: more matched than one request erases; send it again


class AuditActor(Model):
    kind: Literal["member", "key"]
    id: str  # the person's user id or the key's id
    name: str  # the person's email address or the key's name, as it was


class AuditEntry(Model):
    """Who exported or erased a respondent's data, and when; never the value."""

    id: str
    action: Literal["respondent.exported", "respondent.erased"]
    actor: AuditActor
    count: int  # submissions and partial responses
    created_at: datetime


class AuditEntries(Model):
    data: list[AuditEntry]  # newest first


def _change_tag(value: Any) -> str:
    deleted = value.get("deleted") if isinstance(value, dict) else getattr(value, "deleted", None)
    return "deleted" if deleted else "live"


Change = Annotated[
    Annotated[SubmissionDetail, Tag("live")] | Annotated[SubmissionDeleted, Tag("deleted")],
    Discriminator(_change_tag),
]


class Changes(Model):
    """One page of a form's change feed: apply `data` (upsert live ones by id,
    delete tombstones), then store `next` with them."""

    data: list[Change]
    next: int
    has_more: bool


class ExportEnd(Model):
    """The last line of an NDJSON export: without it, the download was cut short."""

    end: Literal[True]
    change_seq: int
    count: int


class SubmissionCreate(Model):
    answers: dict[str, Answer]
    language: str | None = None  # one of the form's languages; None: its own


class SubmissionPatch(Model):
    answers: dict[str, Answer | None]  # a JSON merge patch: None removes an answer


# Files


class File(Model):
    """An uploaded file. An answer to a file question names it by `id`; its
    bytes are at `url` (`client.files.download`)."""

    id: str
    form_id: str | None
    question: str  # the key of the file question it was uploaded to
    submission_id: str | None  # None until a submission names it
    name: str
    content_type: str  # found from its bytes, not from its name
    size: int
    sha256: str | None  # hex
    created_at: datetime
    url: str


class FileLinkCreate(Model):
    expires_in: int | None = None  # seconds; the server's default is an hour


class FileLink(Model):
    """A link that downloads the file without a key until `expires_at`."""

    url: str
    expires_at: datetime


# Events and webhooks


class Event(Model):
    id: str
    type: str  # EventType; a plain string so a new type reads too
    timestamp: datetime
    data: dict[str, Any] | None  # None when the key cannot read the resource
    required_scope: str | None = None  # then: the scope that would show it

    def payload(self) -> "WebhookPayload | None":
        """This event typed, as a webhook delivers it (`SubmissionCreatedPayload`,
        ...); None when its data is not shown to the key that listed it."""
        if self.data is None:
            return None
        return WebhookPayloadAdapter.validate_python(
            {"type": self.type, "timestamp": self.timestamp, "data": self.data}
        )


class EventsPage(Model):
    data: list[Event]
    next: str | None
    has_more: bool


class WebhookEndpoint(Model):
    id: str
    url: str
    description: str
    event_types: list[str]
    form_ids: list[str]
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class WebhookEndpointCreated(WebhookEndpoint):
    secret: str  # shown this once


class WebhookEndpointsPage(_Page[WebhookEndpoint]):
    pass


class WebhookEndpointCreate(Model):
    url: str
    description: str | None = None
    event_types: list[EventType] | None = None
    form_ids: list[str] | None = None
    enabled: bool | None = None


class WebhookEndpointUpdate(Model):
    url: str | None = None
    description: str | None = None
    event_types: list[EventType] | None = None
    form_ids: list[str] | None = None
    enabled: bool | None = None


class SecretRotated(Model):
    secret: str
    previous_secret_expires_at: datetime


class TestSent(Model):
    event_id: str
    delivery_id: str


class Delivery(Model):
    id: str
    event_id: str
    event_type: str
    status: str  # DeliveryStatus
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime


class Attempt(Model):
    attempted_at: datetime
    duration_ms: int
    status_code: int | None
    response_body: str
    error: str | None


class DeliveryDetail(Delivery):
    attempt_log: list[Attempt]


class DeliveriesPage(_Page[Delivery]):
    pass


class Recover(Model):
    since: datetime


class Recovered(Model):
    queued: int


# The event catalogue: each event type's `data`, and the payload a webhook
# delivers (`{type, timestamp, data}`), typed. The server's `webhooks`.


class SubmissionRedacted(Model):
    """A submission as its events keep it once it (or its form) was deleted:
    without `answers`."""

    id: str
    form_id: str
    form_version: int
    submitted_at: datetime
    updated_at: datetime
    version: int
    change_seq: int
    ending: str | None
    language: str | None = None
    redacted: Literal[True]


class SubmissionThin(Model):
    """A submission too large to carry: GET `url` for the rest."""

    id: str
    form_id: str
    version: int
    change_seq: int
    url: str
    thin: Literal[True]
    redacted: bool = False  # its answers were erased since: the submission is gone


def _flag(value: Any, name: str) -> bool:
    return bool(value.get(name) if isinstance(value, dict) else getattr(value, name, None))


def _submission_tag(value: Any) -> str:
    return "thin" if _flag(value, "thin") else "redacted" if _flag(value, "redacted") else "whole"


SubmissionData = Annotated[
    Annotated[SubmissionDetail, Tag("whole")]
    | Annotated[SubmissionRedacted, Tag("redacted")]
    | Annotated[SubmissionThin, Tag("thin")],
    Discriminator(_submission_tag),
]


class SubmissionTombstone(SubmissionDeleted):
    form_id: str


class FormThin(Model):
    """A form too large to carry: GET `url` for the rest."""

    id: str
    version: int
    updated_at: datetime
    url: str
    thin: Literal[True]


class FormStatusChange(FormDetail):
    from_: str = Field(alias="from")  # FormStatus
    to: str
    # opensAt, closesAt or maxSubmissions when it moved by itself; None: a person moved it
    reason: str | None = None


class FormStatusChangeThin(FormThin):
    from_: str = Field(alias="from")
    to: str
    reason: str | None = None


def _form_tag(value: Any) -> str:
    return "thin" if _flag(value, "thin") else "whole"


FormData = Annotated[
    Annotated[FormDetail, Tag("whole")] | Annotated[FormThin, Tag("thin")],
    Discriminator(_form_tag),
]
FormStatusData = Annotated[
    Annotated[FormStatusChange, Tag("whole")] | Annotated[FormStatusChangeThin, Tag("thin")],
    Discriminator(_form_tag),
]


class FormTombstone(Model):
    id: str
    title: str
    slug: str
    deleted: Literal[True]
    deleted_at: datetime


class DisabledEndpoint(Model):
    """A WebhookEndpoint without its `url`."""

    id: str
    description: str
    event_types: list[str]
    form_ids: list[str]
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    failing_since: datetime | None
    previous_secret_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class Ping(Model):
    id: str  # the endpoint tested
    message: str


class _Payload(Model):
    timestamp: datetime  # when the change was made, the same on every attempt


class SubmissionCreatedPayload(_Payload):
    type: Literal["submission.created"]
    data: SubmissionData


class SubmissionUpdatedPayload(_Payload):
    type: Literal["submission.updated"]
    data: SubmissionData


class SubmissionDeletedPayload(_Payload):
    type: Literal["submission.deleted"]
    data: SubmissionTombstone


class FormCreatedPayload(_Payload):
    type: Literal["form.created"]
    data: FormData


class FormUpdatedPayload(_Payload):
    type: Literal["form.updated"]
    data: FormData


class FormStatusChangedPayload(_Payload):
    type: Literal["form.status_changed"]
    data: FormStatusData


class FormDeletedPayload(_Payload):
    type: Literal["form.deleted"]
    data: FormTombstone


class WebhookEndpointDisabledPayload(_Payload):
    type: Literal["webhook_endpoint.disabled"]
    data: DisabledEndpoint


class PingPayload(_Payload):
    type: Literal["ping"]
    data: Ping


class UnknownPayload(_Open):
    """An event of a type newer than this client: every field is kept."""

    type: str
    timestamp: datetime
    data: dict[str, Any]


PAYLOAD_TYPES: dict[str, type[_Payload]] = {
    "submission.created": SubmissionCreatedPayload,
    "submission.updated": SubmissionUpdatedPayload,
    "submission.deleted": SubmissionDeletedPayload,
    "form.created": FormCreatedPayload,
    "form.updated": FormUpdatedPayload,
    "form.status_changed": FormStatusChangedPayload,
    "form.deleted": FormDeletedPayload,
    "webhook_endpoint.disabled": WebhookEndpointDisabledPayload,
    "ping": PingPayload,
}


def _payload_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in PAYLOAD_TYPES else "unknown"


WebhookPayload = Annotated[
    Annotated[SubmissionCreatedPayload, Tag("submission.created")]
    | Annotated[SubmissionUpdatedPayload, Tag("submission.updated")]
    | Annotated[SubmissionDeletedPayload, Tag("submission.deleted")]
    | Annotated[FormCreatedPayload, Tag("form.created")]
    | Annotated[FormUpdatedPayload, Tag("form.updated")]
    | Annotated[FormStatusChangedPayload, Tag("form.status_changed")]
    | Annotated[FormDeletedPayload, Tag("form.deleted")]
    | Annotated[WebhookEndpointDisabledPayload, Tag("webhook_endpoint.disabled")]
    | Annotated[PingPayload, Tag("ping")]
    | Annotated[UnknownPayload, Tag("unknown")],
    Discriminator(_payload_tag),
]
WebhookPayloadAdapter: TypeAdapter[WebhookPayload] = TypeAdapter(WebhookPayload)


# Problems (RFC 9457)


class InvalidParam(Model):
    name: str
    in_: str = Field(alias="in")
    reason: str


class FieldError(Model):
    pointer: str  # RFC 6901, into the request body
    detail: str


class Problem(Model):
    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    invalid_params: list[InvalidParam] | None = None
