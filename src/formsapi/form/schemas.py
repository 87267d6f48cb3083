from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from formsapi.kit.schemas import CleanStr, Schema
from formsapi.language.blocks import Block
from formsapi.language.definition import (
    DEFAULT_LANGUAGE,
    LANGUAGE_DESCRIPTION,
    MAX_ENDINGS,
    MAX_HIDDEN,
    MAX_RESUME_DAYS,
    MAX_RULES,
    MAX_VARIABLES,
    RESUME_DAYS,
    TRANSLATIONS_DESCRIPTION,
    Ending,
    HiddenField,
    LogicRule,
    Variable,
)
from formsapi.language.translation import MAX_LANGUAGES, Language, Message, Translation
from formsapi.models import FormStatus
from formsapi.organization.service import MAX_EMBED_ORIGINS, ORIGIN_RULE, normalized_origin

MESSAGES_DESCRIPTION = (
    "The hosted page's own words in the form's language, by name: next, back, send, save, "
    "required, language, page ('Page {number} of {total}'), fix_one, fix_many ('Please "
    "correct {count} answers'); translations carry theirs."
)
MessageText = Annotated[CleanStr, Field(min_length=1, max_length=200)]
RESUME_DESCRIPTION = (
    "Days a respondent's unfinished answers to a form with pages, and the link that "
    "resumes them, are kept after their last change (1 to 365; default 30)."
)

EMBED_DESCRIPTION = (
    "The sites whose pages may show the form's hosted page (`/f/{formId}`) in a frame, in "
    "place of the organization's list: origins (`https://www.example.com`, or "
    "`https://*.example.com` for its subdomains), at most "
    f"{MAX_EMBED_ORIGINS}; `[]`: no site may. `null`: the organization's list applies."
)


def _origin(value: str) -> str:
    origin = normalized_origin(value)
    if origin is None:
        raise ValueError(f"is not an origin ({ORIGIN_RULE})")
    return origin


def _folded(origins: list[str]) -> list[str]:
    return list(dict.fromkeys(origins))  # the first of each, in order


# Checked as the organization's list is, item by item (a 422 points at the one
# that is not an origin); stored lower case, without a trailing slash, once each.
EmbedOrigins = Annotated[
    list[Annotated[str, AfterValidator(_origin)]],
    Field(max_length=MAX_EMBED_ORIGINS),
    AfterValidator(_folded),
]

CHALLENGE_DESCRIPTION = (
    "Whether the form's hosted page asks the respondent's browser to solve a proof-of-work "
    "challenge (about a second of computing, no third party) before it takes their answers; "
    "the page then needs JavaScript. Default false."
)

ONE_RESPONSE_DESCRIPTION = (
    "One response per respondent, known by `by`: `cookie` (a signed cookie the hosted page "
    "sets; a new browser or a private window gets around it), `email` (the answer to the "
    "email question `question`, trimmed and casefolded; one submission per address, API "
    "posts included; unverified, so someone with several addresses answers several times), "
    "`ip` (the address posting the hosted page, once per `hours`, default 24; people "
    "sharing an office's or a school's address count as one, a VPN changes it) or "
    "`invitation` (single-use links from POST /v1/forms/{formId}/invitations; without a "
    "valid one the hosted page takes no answers; API posts are not bound). "
    "`null`: no limit (the default). Needs FORMSAPI_SECRET_KEY, but for `invitation`."
)
LOCK_DESCRIPTION = (
    "A password or PIN (4 to 128 characters) the hosted page asks for before its first "
    "page, checked on the server and limited per address and per form; write-only (stored "
    "as an argon2 hash; the form says `passwordRequired`). `null` removes it. API posts "
    "with a key are not asked. Needs FORMSAPI_SECRET_KEY."
)
MAX_WINDOW_HOURS = 24 * 366


class OneResponse(Schema):
    by: Literal["cookie", "email", "ip", "invitation"] = Field(
        description="How a respondent is known."
    )
    question: str | None = Field(
        default=None,
        max_length=100,
        description="For `email`: the key of the email question whose answer may submit once.",
    )
    hours: StrictInt | None = Field(
        default=None,
        ge=1,
        le=MAX_WINDOW_HOURS,
        description="For `ip`: hours before one address may submit again; default 24.",
    )

    @model_validator(mode="after")
    def _fits(self) -> "OneResponse":
        if self.by == "email" and not self.question:
            raise ValueError("`email` needs the key of an email question in `question`")
        if self.by != "email" and self.question is not None:
            raise ValueError("`question` goes with `email` only")
        if self.by != "ip" and self.hours is not None:
            raise ValueError("`hours` goes with `ip` only")
        return self


Password = Annotated[
    str,
    Field(
        min_length=4,
        max_length=128,
        description=LOCK_DESCRIPTION,
        json_schema_extra={"writeOnly": True},
    ),
]
MAX_RETENTION_DAYS = 3650
RETENTION_DESCRIPTION = (
    "How many days the form's submissions are kept: older ones are deleted automatically "
    "(with their files, their answers in earlier events, a tombstone in the change feed and "
    "a submission.deleted event, as a DELETE does), within an hour of expiring. null (the "
    "default): kept until deleted. 1 to 3650. Partial responses have their own limit, "
    "`resumeDays`."
)


MESSAGE_MAX = 1000
MAX_SUBMISSIONS = 10_000_000
MAX_QUOTAS = 50
LimitMessage = Annotated[CleanStr, Field(min_length=1, max_length=MESSAGE_MAX)]


def _utc(value: datetime) -> datetime:
    # Bounded before converting: a year 1 or 9999 with an offset would overflow.
    if not 2000 <= value.year <= 9998:
        raise ValueError("must be between the years 2000 and 9998")
    return value.astimezone(UTC)


# RFC 3339 with its offset (`Z` or `+02:00`); a time without one is refused,
# since it would mean a different moment on each host.
Moment = Annotated[AwareDatetime, AfterValidator(_utc)]

OPENS_DESCRIPTION = (
    "When the form opens (RFC 3339 with an offset). Published before then, it waits closed "
    "and its page shows `messageBeforeOpening`; at that time it is published (a "
    "`form.status_changed` event, reason `opensAt`) and this is cleared. `null`: no opening time."
)
CLOSES_DESCRIPTION = (
    "When the form stops taking answers (RFC 3339 with an offset); it is then closed (a "
    "`form.status_changed` event, reason `closesAt`). After `opensAt`. `null`: none."
)
MAX_DESCRIPTION = (
    "The number of submissions the form takes: the one that reaches it is the last accepted, "
    "and closes the form in its transaction (reason `maxSubmissions`). Deleted submissions "
    "give their place back. `null`: no limit."
)
BEFORE_DESCRIPTION = "What the hosted page says before `opensAt` (plain text). `null`: a default."
AFTER_DESCRIPTION = (
    "What the hosted page says once the form is closed (plain text). `null`: a default."
)
QUOTAS_DESCRIPTION = (
    "Places per option of a single-choice or dropdown question: once `limit` submissions "
    f"chose it, the option is full (at most {MAX_QUOTAS} quotas). `null` or `[]`: none."
)


class QuotaAction(StrEnum):
    close_option = "closeOption"
    end_form = "endForm"


class Quota(Schema):
    """Places for one option of one question."""

    question: str = Field(min_length=1, max_length=100, description="The question's key.")
    option: str = Field(min_length=1, max_length=100, description="The option's value.")
    limit: StrictInt = Field(ge=1, le=MAX_SUBMISSIONS, description="The places.")
    action: QuotaAction = Field(
        default=QuotaAction.close_option,
        description="`closeOption`: once full, the option shows as full and an answer "
        "choosing it is refused (422 at the question). `endForm`: it stays shown, and "
        "those who choose it see `message` instead of being stored (409 `quota-full`).",
    )
    message: LimitMessage | None = Field(
        default=None, description="What `endForm` shows those who chose the full option."
    )


class QuotaState(Quota):
    remaining: int = Field(description="Places left (0: full).")


class FormSummary(Schema):
    id: str = Field(examples=["frm_01jd2x8k4m5n6p7q8r9s0t1v2w"])
    title: str
    slug: str
    status: FormStatus
    response_count: int
    created_at: datetime
    change_seq: int = Field(
        description="The number of the latest change to the form's submissions (0: none yet). "
        "Unchanged since your last sync: nothing to fetch from its change feed."
    )


class FormDetail(FormSummary):
    updated_at: datetime
    version: int = Field(description="Increments whenever the blocks change.")
    blocks: list[Block] = Field(description="Question and layout blocks, in order.")
    hidden_fields: list[HiddenField] = Field(
        description="Values a link carries (?key=value), stored with the answers."
    )
    variables: list[Variable] = Field(
        description="Numbers or text the server computes, stored as `vars.<name>`."
    )
    logic: list[LogicRule] = Field(description="Rules: set a variable or jump, in order.")
    endings: list[Ending] = Field(description="Thank-you texts or redirects; default the last.")
    language: str = Field(description=LANGUAGE_DESCRIPTION)
    languages: list[str] = Field(description="The form's own language, then its translations'.")
    translations: dict[str, Translation] = Field(description=TRANSLATIONS_DESCRIPTION)
    missing_translations: dict[str, list[str]] = Field(
        description="For each translation, the JSON pointers of the texts it leaves in the "
        "form's own language."
    )
    content_language: str = Field(
        description="The language of this response's title, blocks and endings (`?lang=`)."
    )
    messages: dict[Message, str] = Field(description=MESSAGES_DESCRIPTION)
    resume_days: int = Field(description=RESUME_DESCRIPTION)
    embed_origins: list[str] | None = Field(description=EMBED_DESCRIPTION)
    challenge: bool = Field(description=CHALLENGE_DESCRIPTION)
    retention_days: int | None = Field(description=RETENTION_DESCRIPTION)
    opens_at: datetime | None = Field(description=OPENS_DESCRIPTION)
    closes_at: datetime | None = Field(description=CLOSES_DESCRIPTION)
    max_submissions: int | None = Field(description=MAX_DESCRIPTION)
    message_before_opening: str | None = Field(description=BEFORE_DESCRIPTION)
    message_after_closing: str | None = Field(description=AFTER_DESCRIPTION)
    quotas: list[QuotaState] = Field(description=QUOTAS_DESCRIPTION)
    one_response: OneResponse | None = Field(description=ONE_RESPONSE_DESCRIPTION)
    password_required: bool = Field(
        description="Whether the hosted page asks for a password before its first page."
    )
    answers_schema: dict[str, Any] = Field(
        alias="schema",
        description="JSON Schema (draft 2020-12) of the answers object the blocks define.",
    )


def _repeated_keys(raw: object) -> list[InitErrorDetails]:
    """Errors for question keys used twice, from the raw blocks, so they are
    reported with any other error in the same response."""
    if not isinstance(raw, list):
        return []
    seen: dict[str, int] = {}
    errors: list[InitErrorDetails] = []
    for index, block in enumerate(raw):
        key = block.get("key") if isinstance(block, dict) else None
        if not isinstance(key, str):
            continue
        if key in seen:
            errors.append(
                {
                    "type": PydanticCustomError(
                        "repeated_key",
                        "repeats the key of block {first}: keys must be unique",
                        {"first": seen[key]},
                    ),
                    "loc": (index, "key"),
                    "input": key,
                }
            )
        else:
            seen[key] = index
    return errors


def _blocks_with_every_error(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    repeated = _repeated_keys(value)
    try:
        blocks = handler(value)
    except ValidationError as invalid:
        if not repeated:
            raise
        earlier: list[InitErrorDetails] = [
            {"type": e["type"], "loc": e["loc"], "input": e["input"], "ctx": e.get("ctx", {})}
            for e in invalid.errors()
        ]
        raise ValidationError.from_exception_data(invalid.title, [*earlier, *repeated]) from None
    if repeated:
        raise ValidationError.from_exception_data("blocks", repeated)
    return blocks


Blocks = Annotated[list[Block], WrapValidator(_blocks_with_every_error)]


SLUG = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
        description="Lower-case letters, digits and single dashes.",
    ),
]
TITLE_MAX = 200
TITLE = Annotated[CleanStr, Field(min_length=1, max_length=TITLE_MAX)]


class FormCreate(Schema):
    title: TITLE
    slug: SLUG | None = Field(default=None, description="Default: made from the title.")
    blocks: Blocks = Field(default_factory=list)
    hidden_fields: list[HiddenField] = Field(default_factory=list, max_length=MAX_HIDDEN)
    variables: list[Variable] = Field(default_factory=list, max_length=MAX_VARIABLES)
    logic: list[LogicRule] = Field(default_factory=list, max_length=MAX_RULES)
    endings: list[Ending] = Field(default_factory=list, max_length=MAX_ENDINGS)
    language: Language = Field(default=DEFAULT_LANGUAGE, description=LANGUAGE_DESCRIPTION)
    translations: Annotated[dict[Language, Translation], Field(max_length=MAX_LANGUAGES)] = Field(
        default_factory=dict, description=TRANSLATIONS_DESCRIPTION
    )
    messages: dict[Message, MessageText] = Field(
        default_factory=dict, description=MESSAGES_DESCRIPTION
    )
    resume_days: StrictInt = Field(
        default=RESUME_DAYS, ge=1, le=MAX_RESUME_DAYS, description=RESUME_DESCRIPTION
    )
    embed_origins: EmbedOrigins | None = Field(default=None, description=EMBED_DESCRIPTION)
    challenge: StrictBool = Field(default=False, description=CHALLENGE_DESCRIPTION)
    retention_days: StrictInt | None = Field(
        default=None, ge=1, le=MAX_RETENTION_DAYS, description=RETENTION_DESCRIPTION
    )
    opens_at: Moment | None = Field(default=None, description=OPENS_DESCRIPTION)
    closes_at: Moment | None = Field(default=None, description=CLOSES_DESCRIPTION)
    max_submissions: StrictInt | None = Field(
        default=None, ge=1, le=MAX_SUBMISSIONS, description=MAX_DESCRIPTION
    )
    message_before_opening: LimitMessage | None = Field(
        default=None, description=BEFORE_DESCRIPTION
    )
    message_after_closing: LimitMessage | None = Field(default=None, description=AFTER_DESCRIPTION)
    quotas: list[Quota] | None = Field(
        default=None, max_length=MAX_QUOTAS, description=QUOTAS_DESCRIPTION
    )
    one_response: OneResponse | None = Field(default=None, description=ONE_RESPONSE_DESCRIPTION)
    password: Password | None = Field(default=None, description=LOCK_DESCRIPTION)


class FormUpdate(Schema):
    """Only the fields sent change. A change of `blocks`, `hiddenFields`,
    `variables`, `logic` or `endings` makes a new version; `embedOrigins`
    (`null`: back to the organization's list), `challenge`, `oneResponse`
    (`null`: no limit), `password` (`null`: none asked), `retentionDays`
    (`null`: kept until deleted), the schedule, limit, messages and quotas
    (`null` clears each) do not."""

    title: TITLE | None = None
    slug: SLUG | None = None
    blocks: Blocks | None = None
    hidden_fields: list[HiddenField] | None = Field(default=None, max_length=MAX_HIDDEN)
    variables: list[Variable] | None = Field(default=None, max_length=MAX_VARIABLES)
    logic: list[LogicRule] | None = Field(default=None, max_length=MAX_RULES)
    endings: list[Ending] | None = Field(default=None, max_length=MAX_ENDINGS)
    language: Language | None = Field(default=None, description=LANGUAGE_DESCRIPTION)
    translations: Annotated[dict[Language, Translation], Field(max_length=MAX_LANGUAGES)] | None = (
        Field(default=None, description=TRANSLATIONS_DESCRIPTION)
    )
    messages: dict[Message, MessageText] | None = Field(
        default=None, description=MESSAGES_DESCRIPTION
    )
    resume_days: StrictInt | None = Field(
        default=None, ge=1, le=MAX_RESUME_DAYS, description=RESUME_DESCRIPTION
    )
    embed_origins: EmbedOrigins | None = Field(default=None, description=EMBED_DESCRIPTION)
    challenge: StrictBool | None = Field(default=None, description=CHALLENGE_DESCRIPTION)
    retention_days: StrictInt | None = Field(
        default=None, ge=1, le=MAX_RETENTION_DAYS, description=RETENTION_DESCRIPTION
    )
    opens_at: Moment | None = Field(default=None, description=OPENS_DESCRIPTION)
    closes_at: Moment | None = Field(default=None, description=CLOSES_DESCRIPTION)
    max_submissions: StrictInt | None = Field(
        default=None, ge=1, le=MAX_SUBMISSIONS, description=MAX_DESCRIPTION
    )
    message_before_opening: LimitMessage | None = Field(
        default=None, description=BEFORE_DESCRIPTION
    )
    message_after_closing: LimitMessage | None = Field(default=None, description=AFTER_DESCRIPTION)
    quotas: list[Quota] | None = Field(
        default=None, max_length=MAX_QUOTAS, description=QUOTAS_DESCRIPTION
    )
    one_response: OneResponse | None = Field(default=None, description=ONE_RESPONSE_DESCRIPTION)
    password: Password | None = Field(default=None, description=LOCK_DESCRIPTION)
    status: FormStatus | None = Field(
        default=None,
        description="draft -> published, published -> closed, closed -> published, "
        "any -> archived; archived forms are read-only.",
    )
