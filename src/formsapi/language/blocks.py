"""Question and layout blocks, and the JSON Schema of the answers they define.

Every answer is a string or a number, whatever the question type:
- text, email, url, phone, date (YYYY-MM-DD) and single choice answer a string;
- number answers a number, rating an integer from 1 to its scale;
- multiple choice answers one string: the chosen option values joined by commas,
  in the order the options are listed ("red,blue"). Option values therefore
  cannot contain commas.
- file answers one string: the ids of its uploaded files, joined by commas.
"""

import math
import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeGuard
from urllib.parse import urlsplit

import orjson
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    StrictInt,
    TypeAdapter,
    model_validator,
)

from formsapi.kit.schemas import CleanStr, Schema
from formsapi.language.logic import compile_pattern, pattern_problem

KEY_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
# No commas (multiple choice joins values with them) and no edge whitespace.
OPTION_VALUE_PATTERN = r"^[^,\s](?:[^,]*[^,\s])?$"
PHONE_PATTERN = r"^\+?[0-9][0-9 ()./-]{3,30}[0-9]$"
TIME_PATTERN = r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"
DATE_TIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]$"

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Deliberately plain: something@domain.tld, no spaces. Deliverability is not
# knowable from syntax; stricter patterns refuse real addresses.
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
# Never in a URL as typed: controls (C0, DEL, C1) and whitespace. urlsplit
# drops some of them silently (TAB, CR, LF; C0 before the scheme) while the
# answer is stored as sent, and a browser drops them too: a link to a URL
# that is not the one shown.
_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f\s]")

Answer = str | int | float
# What a regular expression reads as itself, escaped as ECMA-262 (JSON
# Schema's dialect) reads it: Python's re.escape escapes more (\-, \ ), which
# a Unicode-mode ECMA pattern refuses.
_ECMA_SPECIAL = re.compile(r"[\\^$.|?*+()\[\]{}/]")


def ecma_escape(text: str) -> str:
    return _ECMA_SPECIAL.sub(lambda found: "\\" + found.group(), text)


# Numbers every JSON reader keeps exact (and PostgreSQL's JSONB accepts).
LARGEST_NUMBER = 2**53


def _finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number a client can read back: not a bool, NaN, infinite or huge."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    # An int is compared as it is: one too large for a float cannot be made one.
    return abs(value) <= LARGEST_NUMBER and (isinstance(value, int) or math.isfinite(value))


def _a_number(value: object) -> object:
    """Strict, like a block's other numbers and flags: JSON's true is not 1,
    nor "5" a 5 (the schema says number; the fuzz test holds us to it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


Bound = Annotated[
    int | float,
    BeforeValidator(_a_number),
    Field(allow_inf_nan=False, ge=-LARGEST_NUMBER, le=LARGEST_NUMBER),
]


class Option(Schema):
    value: Annotated[CleanStr, Field(min_length=1, max_length=100, pattern=OPTION_VALUE_PATTERN)]
    label: Annotated[CleanStr, Field(min_length=1, max_length=200)]


def _json_rule(value: Any) -> Any:
    """A rule is JSON whose texts hold no NUL: PostgreSQL's JSONB cannot
    store one (the rule's other checks are language/logic.py's). Both looked for
    in its JSON, in C: pydantic's JsonValue took each node in Python, and a
    large form's save spent a third of its time there."""
    try:
        clean = b"\\u0000" not in orjson.dumps(value)
    except TypeError:  # not JSON, or a whole number past 64 bits (the checks refuse it later)
        clean = False
    if not clean:
        _walk_json(value)
    return value


def _walk_json(value: Any) -> None:
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            if "\x00" in node:
                raise ValueError("a text in a rule cannot hold the NUL character (U+0000)")
        elif isinstance(node, dict):
            if not all(isinstance(key, str) for key in node):
                raise ValueError("must be JSON: an object's keys are text")
            pending += [*node.keys(), *node.values()]
        elif isinstance(node, list):
            pending += node
        elif node is not None and not isinstance(node, bool | int | float):
            raise ValueError("must be JSON: objects, arrays, text, numbers, booleans or null")


# A JSON Logic rule (language/logic.py), checked with the whole form on save.
Rule = Annotated[Any, AfterValidator(_json_rule)]
VISIBLE_IF = Field(default=None, description="JSON Logic: the block is shown only when this holds.")


class _Question(Schema):
    key: Annotated[CleanStr, Field(pattern=KEY_PATTERN, description="Stable answer key.")]
    title: Annotated[CleanStr, Field(min_length=1, max_length=500)]
    description: CleanStr | None = Field(default=None, max_length=2000)
    required: StrictBool = False
    visible_if: Rule = VISIBLE_IF
    required_if: Rule = Field(
        default=None, description="JSON Logic: the question is required when this holds."
    )
    prefill: StrictBool | None = Field(
        default=None,
        description="The hosted page may fill this in from its link's query string (?key=...).",
    )

    def answer_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        """The answer as stored (normalized), or what is wrong with it. Kept
        beside answer_schema so the server checks what the schema promises."""
        raise NotImplementedError

    def property_schema(self) -> dict[str, Any]:
        schema = {"title": self.title, **self.answer_schema()}
        if self.description:
            schema["description"] = self.description
        return schema

    def parts(self) -> "list[tuple[str, Part]]":
        """The answers this question gives, by their keys: itself, under its
        key, for all but a matrix (a key per row)."""
        return [(self.key, self)]


class _Text(_Question):
    min_length: StrictInt | None = Field(default=None, ge=0, le=100_000)
    max_length: StrictInt | None = Field(default=None, ge=1, le=100_000)
    placeholder: CleanStr | None = Field(default=None, max_length=200)

    def _lengths(self, default_max: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "maxLength": self.max_length or default_max}
        min_length = self.min_length or (1 if self.required else 0)
        if min_length:
            schema["minLength"] = min_length
        return schema

    def _check_text(self, value: object, default_max: int) -> tuple[Answer, str | None]:
        if not isinstance(value, str):
            return "", "must be a string"
        longest = self.max_length or default_max
        shortest = self.min_length or (1 if self.required else 0)
        if len(value) > longest:
            return value, f"must be at most {longest} characters"
        if len(value) < shortest:
            return value, "is required" if shortest == 1 else (
                f"must be at least {shortest} characters"
            )
        return value, None

    @model_validator(mode="after")
    def _min_le_max(self) -> "_Text":
        if (
            self.min_length is not None
            and self.max_length is not None
            and self.min_length > self.max_length
        ):
            raise ValueError("minLength must not exceed maxLength")
        return self


class ShortText(_Text):
    type: Literal["short_text"]
    pattern: CleanStr | None = Field(
        default=None,
        description="A regular expression the answer must match somewhere (RE2 syntax; "
        "anchor it with ^ and $ to match the whole answer).",
    )
    pattern_message: CleanStr | None = Field(
        default=None, max_length=200, description="What to tell a respondent who misses it."
    )

    @model_validator(mode="after")
    def _pattern_works(self) -> "ShortText":
        problem = pattern_problem(self.pattern) if self.pattern is not None else None
        if problem:
            raise ValueError(f"pattern {problem}")
        return self

    def answer_schema(self) -> dict[str, Any]:
        schema = self._lengths(255)
        if self.pattern:
            schema["pattern"] = self.pattern
        return schema

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        answer, problem = self._check_text(value, 255)
        if (
            problem is None
            and self.pattern
            and isinstance(answer, str)
            and answer
            and compile_pattern(self.pattern).search(answer) is None
        ):
            return answer, self.pattern_message or "is not in the expected format"
        return answer, problem


class LongText(_Text):
    type: Literal["long_text"]

    def answer_schema(self) -> dict[str, Any]:
        return self._lengths(10_000)

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        return self._check_text(value, 10_000)


class Email(_Question):
    type: Literal["email"]
    placeholder: CleanStr | None = Field(default=None, max_length=200)

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "email", "maxLength": 254}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not isinstance(value, str) or len(value) > 254 or not EMAIL.fullmatch(value):
            return str(value), "must be an email address such as ada@example.com"
        return value, None


class Url(_Question):
    type: Literal["url"]
    placeholder: CleanStr | None = Field(default=None, max_length=200)

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "uri", "maxLength": 2048}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if isinstance(value, str) and len(value) <= 2048 and not _NOT_IN_URL.search(value):
            try:
                parts = urlsplit(value)
            except ValueError:  # an unclosed [IPv6], or a host NFKC gives a "/" (U+FF0F)
                parts = None
            if parts is not None and parts.scheme in ("http", "https") and parts.netloc:
                return value, None
        return str(value), "must be an http(s) URL such as https://example.com"


class Phone(_Question):
    type: Literal["phone"]
    placeholder: CleanStr | None = Field(default=None, max_length=200)

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": PHONE_PATTERN}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not isinstance(value, str) or not re.fullmatch(PHONE_PATTERN, value):
            return str(value), "must be a phone number such as +1 555 0100"
        return value, None


class Number(_Question):
    type: Literal["number"]
    # int first: whole bounds stay whole numbers in the JSON.
    min: Bound | None = None
    max: Bound | None = None
    integer: StrictBool = Field(default=False, description="Only whole numbers are accepted.")
    step: Bound | None = Field(
        default=None, gt=0, description="Answers are multiples of this (0.5, 0.01, 5)."
    )
    unit: CleanStr | None = Field(default=None, max_length=20)

    @model_validator(mode="after")
    def _min_le_max(self) -> "Number":
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min must not exceed max")
        return self

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not _finite_number(value):
            return 0, "must be a number"
        if self.integer and value != int(value):
            return value, "must be a whole number"
        if self.min is not None and value < self.min:
            return value, f"must be at least {self.min}"
        if self.max is not None and value > self.max:
            return value, f"must be at most {self.max}"
        if self.step is not None and Decimal(str(value)) % Decimal(str(self.step)) != 0:
            return value, f"must be a multiple of {self.step}"
        return (int(value) if self.integer else value), None

    def answer_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.min is not None:
            schema["minimum"] = self.min
        if self.max is not None:
            schema["maximum"] = self.max
        if self.step is not None:
            schema["multipleOf"] = self.step
        return schema


class Rating(_Question):
    type: Literal["rating"]
    scale: StrictInt = Field(default=5, ge=2, le=10, description="Highest rating; the lowest is 1.")

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": self.scale}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not _finite_number(value) or value != int(value) or not 1 <= value <= self.scale:
            return 0, f"must be a whole number from 1 to {self.scale}"
        return int(value), None


Shuffle = Literal["none", "all", "all_but_last"]
SHUFFLE = Field(
    default=None,
    description="Options in random order on the hosted page: all, or all but the last "
    '(an "Other" or "None of these"). Default none.',
)


OTHER = "other"
OTHER_TEXT_MAX = 200


class _Choice(_Question):
    options: Annotated[list[Option], Field(min_length=1, max_length=200)]
    shuffle: Shuffle | None = SHUFFLE
    allow_other: StrictBool | None = Field(
        default=None,
        description='An "Other" choice (value `other`) whose text is answered under `<key>_other`.',
    )

    @model_validator(mode="after")
    def _unique_values(self) -> "_Choice":
        values = [option.value for option in self.options]
        if len(set(values)) != len(values):
            raise ValueError("option values must be unique")
        if self.allow_other and OTHER in values:
            raise ValueError(f"the option value {OTHER!r} is the Other choice's (allowOther)")
        return self

    def values(self) -> list[str]:
        """The values an answer may choose, Other's last."""
        return [option.value for option in self.options] + ([OTHER] if self.allow_other else [])

    def parts(self) -> "list[tuple[str, Part]]":
        if not self.allow_other:
            return [(self.key, self)]
        return [(self.key, self), (f"{self.key}_other", OtherText(self))]


class SingleChoice(_Choice):
    type: Literal["single_choice"]

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": self.values()}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        values = self.values()
        if value not in values:
            return str(value), "must be one of: " + ", ".join(values)
        return str(value), None


class MultipleChoice(_Choice):
    type: Literal["multiple_choice"]
    min_selections: StrictInt | None = Field(default=None, ge=1, le=200)
    max_selections: StrictInt | None = Field(default=None, ge=1, le=200)

    @model_validator(mode="after")
    def _selection_bounds(self) -> "MultipleChoice":
        low, high = self.min_selections, self.max_selections
        if low is not None and high is not None and low > high:
            raise ValueError("minSelections must not exceed maxSelections")
        if high is not None and high > len(self.options):
            raise ValueError("maxSelections must not exceed the number of options")
        return self

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        """Accepts the values in any order; stores them in option order."""
        values = self.values()
        if not isinstance(value, str):
            return "", "must be a string of option values joined by commas"
        if not value:
            return value, "needs at least one option; leave the key out when there is no answer"
        chosen = value.split(",")
        unknown = [v for v in chosen if v not in values]
        if unknown:
            return value, f"has unknown options: {', '.join(unknown)}; choose from: " + ", ".join(
                values
            )
        if len(set(chosen)) != len(chosen):
            return value, "names an option twice"
        low, high = self.min_selections or 1, self.max_selections
        if len(chosen) < low:
            return value, f"needs at least {low} options"
        if high is not None and len(chosen) > high:
            return value, f"allows at most {high} options"
        return ",".join(v for v in values if v in chosen), None

    def answer_schema(self) -> dict[str, Any]:
        one = "(?:" + "|".join(ecma_escape(value) for value in self.values()) + ")"
        return {
            "type": "string",
            "pattern": f"^{one}(?:,{one})*$",
            "description": "Chosen option values joined by commas, in option order.",
            "x-options": self.values(),
            **({"x-minSelections": self.min_selections} if self.min_selections else {}),
            **({"x-maxSelections": self.max_selections} if self.max_selections else {}),
        }


IsoDate = Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]


class Date(_Question):
    type: Literal["date"]
    min: IsoDate | None = Field(default=None, description="The earliest date accepted.")
    max: IsoDate | None = Field(default=None, description="The latest date accepted.")

    @model_validator(mode="after")
    def _real_dates(self) -> "Date":
        for bound in (self.min, self.max):
            if bound is not None:
                date.fromisoformat(bound)  # a ValueError is the 422
        if self.min and self.max and self.min > self.max:
            raise ValueError("min must not be after max")
        return self

    def answer_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "format": "date"}
        if self.min:
            schema["formatMinimum"] = self.min
        if self.max:
            schema["formatMaximum"] = self.max
        return schema

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if isinstance(value, str) and len(value) == 10:
            try:
                day = date.fromisoformat(value).isoformat()
            except ValueError:
                day = None
            if day is not None:
                if self.min and day < self.min:
                    return day, f"must be on or after {self.min}"
                if self.max and day > self.max:
                    return day, f"must be on or before {self.max}"
                return day, None
        return str(value), "must be a date as YYYY-MM-DD"


class Time(_Question):
    """A time of day, 24-hour, as the respondent gives it (no time zone)."""

    type: Literal["time"]

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": TIME_PATTERN}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if isinstance(value, str) and re.fullmatch(TIME_PATTERN, value):
            return value, None
        return str(value), "must be a time as HH:MM (24-hour)"


class DateTime(_Question):
    """A date and time of day as the respondent gives it (no time zone)."""

    type: Literal["date_time"]

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": DATE_TIME_PATTERN}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if isinstance(value, str) and re.fullmatch(DATE_TIME_PATTERN, value):
            try:
                date.fromisoformat(value[:10])
            except ValueError:
                pass
            else:
                return value, None
        return str(value), "must be a date and time as YYYY-MM-DDTHH:MM"


class YesNo(_Question):
    type: Literal["yes_no"]

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": ["yes", "no"]}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if value in ("yes", "no"):
            return str(value), None
        return str(value), "must be yes or no"


class _Scale(_Question):
    min_label: CleanStr | None = Field(default=None, max_length=100)
    max_label: CleanStr | None = Field(default=None, max_length=100)

    def bounds(self) -> tuple[int, int]:
        raise NotImplementedError

    def answer_schema(self) -> dict[str, Any]:
        low, high = self.bounds()
        return {"type": "integer", "minimum": low, "maximum": high}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        low, high = self.bounds()
        if not _finite_number(value) or value != int(value) or not low <= value <= high:
            return 0, f"must be a whole number from {low} to {high}"
        return int(value), None


class Nps(_Scale):
    """Net Promoter Score: 0 (not at all likely) to 10 (extremely likely)."""

    type: Literal["nps"]

    def bounds(self) -> tuple[int, int]:
        return 0, 10


class Scale(_Scale):
    """An opinion or linear scale, labelled at its ends."""

    type: Literal["scale"]
    min: StrictInt = Field(default=1, ge=0, le=1, description="The lowest point: 0 or 1.")
    max: StrictInt = Field(default=5, ge=2, le=10, description="The highest point: 2 to 10.")

    def bounds(self) -> tuple[int, int]:
        return self.min, self.max


class Dropdown(SingleChoice):
    """One choice among a long list (up to 1,000), searchable with script on."""

    type: Literal["dropdown"]  # type: ignore[assignment]
    options: Annotated[list[Option], Field(min_length=1, max_length=1000)]


class Ranking(_Choice):
    """Every option, in the respondent's order."""

    type: Literal["ranking"]

    @model_validator(mode="after")
    def _no_other(self) -> "Ranking":
        if self.allow_other:
            raise ValueError("a ranking orders its options: it has no Other")
        return self

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        values = [option.value for option in self.options]
        ranked = value.split(",") if isinstance(value, str) else None
        if ranked is None or sorted(ranked) != sorted(values):
            return str(value), "must be every option value once, in order, joined by commas: " + (
                ",".join(values)
            )
        return str(value), None

    def answer_schema(self) -> dict[str, Any]:
        one = "(?:" + "|".join(ecma_escape(o.value) for o in self.options) + ")"
        return {
            "type": "string",
            "pattern": f"^{one}(?:,{one}){{{len(self.options) - 1}}}$",
            "description": "Every option value once, most preferred first, joined by commas.",
            "x-options": [option.value for option in self.options],
        }


ROW_PATTERN = r"^[a-z0-9][a-z0-9_]{0,63}$"


class Row(Schema):
    value: Annotated[CleanStr, Field(pattern=ROW_PATTERN, description="Its key after the dot.")]
    label: Annotated[CleanStr, Field(min_length=1, max_length=200)]


class Matrix(_Question):
    """Rows (statements) rated on one scale of columns: each row's answer is
    its own key, `question.row`, holding the chosen column's value."""

    type: Literal["matrix"]
    rows: Annotated[list[Row], Field(min_length=1, max_length=50)]
    columns: Annotated[list[Option], Field(min_length=2, max_length=10)]
    shuffle: Shuffle | None = SHUFFLE

    @model_validator(mode="after")
    def _unique(self) -> "Matrix":
        for name, items in (("row", self.rows), ("column", self.columns)):
            values = [item.value for item in items]
            if len(set(values)) != len(values):
                raise ValueError(f"{name} values must be unique")
        return self

    @property
    def options(self) -> list[Row]:
        """The rows: what `shuffle` orders."""
        return self.rows

    def parts(self) -> "list[tuple[str, Part]]":
        return [(f"{self.key}.{row.value}", MatrixRow(self, row)) for row in self.rows]


class MatrixRow:
    """One row of a matrix, answered as a question of its own."""

    def __init__(self, matrix: Matrix, row: Row) -> None:
        self.matrix = matrix
        self.row = row
        self.required = matrix.required
        self.title = f"{matrix.title}: {row.label}"

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": [column.value for column in self.matrix.columns]}

    def property_schema(self) -> dict[str, Any]:
        return {"title": self.title, **self.answer_schema()}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        values = [column.value for column in self.matrix.columns]
        if value not in values:
            return str(value), "must be one of: " + ", ".join(values)
        return str(value), None


FILE_ID = r"fil_[0-9a-z]{26}"
# A MIME type, or a family of them ("image/*").
MEDIA_RANGE_PATTERN = r"^[a-z]+/(?:\*|[a-z0-9][a-z0-9.+-]{0,126})$"
# What a form may allow for one file; the server's FORMSAPI_UPLOAD_MAX_BYTES
# caps it further.
LARGEST_FILE = 5 * 1024**3
DEFAULT_FILE_SIZE = 10 * 1024**2


class FileUpload(_Question):
    """Files sent before the answers (POST /v1/forms/{formId}/files, or the
    hosted page as they are picked). The answer is their ids, joined by
    commas like a multiple choice's values; each file belongs to the
    submission that names it, and goes with it."""

    type: Literal["file"]
    max_size: StrictInt = Field(
        default=DEFAULT_FILE_SIZE,
        ge=1,
        le=LARGEST_FILE,
        description="Bytes per file at most; the server's own limit applies too.",
    )
    max_files: StrictInt = Field(default=1, ge=1, le=20, description="Files in one answer.")
    accept: (
        Annotated[
            list[Annotated[str, Field(pattern=MEDIA_RANGE_PATTERN)]],
            Field(min_length=1, max_length=50),
        ]
        | None
    ) = Field(
        default=None,
        description="Types allowed (`application/pdf`, `image/*`), checked against what the "
        "file's bytes are, never its name or declared type. Unset: any type.",
    )

    def accepts(self, content_type: str) -> bool:
        if self.accept is None:
            return True
        family = content_type.split("/", 1)[0] + "/*"
        return content_type in self.accept or family in self.accept

    def answer_schema(self) -> dict[str, Any]:
        more = f"(?:,{FILE_ID}){{0,{self.max_files - 1}}}" if self.max_files > 1 else ""
        return {"type": "string", "pattern": f"^{FILE_ID}{more}$"}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not isinstance(value, str) or not value:
            return str(value), "must be the id of an uploaded file"
        ids = value.split(",")
        if len(ids) > self.max_files:
            return value, f"must name at most {self.max_files} file(s)"
        if len(set(ids)) != len(ids) or not all(_FILE_ID.fullmatch(i) for i in ids):
            return value, "must be ids of uploaded files (fil_...), joined by commas"
        return value, None


_FILE_ID = re.compile(FILE_ID)


class OtherText:
    """The text of a choice's Other, answered under `<key>_other`: required
    when Other is chosen, refused when it is not (validate_answers)."""

    def __init__(self, choice: "_Choice") -> None:
        self.choice = choice
        self.required = False
        self.title = f"{choice.title}: other"

    def answer_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "maxLength": OTHER_TEXT_MAX}

    def property_schema(self) -> dict[str, Any]:
        return {"title": self.title, **self.answer_schema()}

    def check_answer(self, value: object) -> tuple[Answer, str | None]:
        if not isinstance(value, str) or not value.strip() or len(value) > OTHER_TEXT_MAX:
            return str(value), f"must be text of 1 to {OTHER_TEXT_MAX} characters"
        return value, None


class Heading(Schema):
    type: Literal["heading"]
    text: Annotated[CleanStr, Field(min_length=1, max_length=500)]
    visible_if: Rule = VISIBLE_IF


class Paragraph(Schema):
    type: Literal["paragraph"]
    text: Annotated[CleanStr, Field(min_length=1, max_length=5000)]
    visible_if: Rule = VISIBLE_IF


class PageBreak(Schema):
    """Starts a page. Its key names the page, for jumps to it."""

    type: Literal["page_break"]
    key: Annotated[CleanStr, Field(pattern=KEY_PATTERN)] | None = None
    visible_if: Rule = Field(
        default=None, description="JSON Logic: the page is shown only when this holds."
    )


Question = (
    ShortText
    | LongText
    | Email
    | Url
    | Phone
    | Number
    | Rating
    | SingleChoice
    | MultipleChoice
    | Date
    | Time
    | DateTime
    | YesNo
    | Nps
    | Scale
    | Dropdown
    | Ranking
    | Matrix
    | FileUpload
)
Block = Annotated[
    Question | Heading | Paragraph | PageBreak,
    Field(discriminator="type"),
]
QUESTION_TYPES = (
    ShortText,
    LongText,
    Email,
    Url,
    Phone,
    Number,
    Rating,
    SingleChoice,
    MultipleChoice,
    Date,
    Time,
    DateTime,
    YesNo,
    Nps,
    Scale,
    Dropdown,
    Ranking,
    Matrix,
    FileUpload,
)


# What checks one answer key: a question, or a matrix's row.
Part = _Question | MatrixRow | OtherText

# Questions whose answers are numbers; those whose answers rules see as lists.
NUMERIC = (Number, Rating, Nps, Scale)
LISTED = (MultipleChoice, Ranking)
# Questions whose answers are counted value by value for summaries; the
# others (texts, dates, files) only as answered or not. A matrix's rows are too.
VALUED = (SingleChoice, Dropdown, MultipleChoice, YesNo, Rating, Scale, Nps, Number, Ranking)

BlockList: TypeAdapter[list[Block]] = TypeAdapter(list[Block])


def dump_blocks(blocks: list[Block]) -> list[dict[str, Any]]:
    """Blocks in their API shape (camelCase, unset settings left out, `type` first)."""
    dumped = BlockList.dump_python(blocks, by_alias=True, exclude_none=True)
    return [{"type": block.pop("type"), **block} for block in dumped]


def key_errors(blocks: list[Block]) -> list[tuple[str, str]]:
    """(JSON pointer, problem) for each question key used before in the list."""
    seen: dict[str, int] = {}
    errors = []
    for index, block in enumerate(blocks):
        if isinstance(block, QUESTION_TYPES):
            if block.key in seen:
                errors.append(
                    (
                        f"/blocks/{index}/key",
                        f"repeats the key of block {seen[block.key]}: keys must be unique",
                    )
                )
            else:
                seen[block.key] = index
    return errors


def questions(blocks: list[Block]) -> list[Question]:
    return [block for block in blocks if isinstance(block, QUESTION_TYPES)]


def parts(blocks: list[Block]) -> "list[tuple[str, Part]]":
    """Every answer key of these blocks' questions, with what checks it."""
    return [part for question in questions(blocks) for part in question.parts()]


def answers_schema(blocks: list[Block], *, title: str | None = None) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the answers object these blocks define."""
    asked = parts(blocks)
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {key: part.property_schema() for key, part in asked},
        "required": [key for key, part in asked if part.required],
        "additionalProperties": False,
    }
    if title:
        schema["title"] = title
    return schema
