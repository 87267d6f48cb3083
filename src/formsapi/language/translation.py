"""A form's texts in other languages than its own.

A translation gives, for a language, any of the form's texts: its title,
each block's title, description, placeholder, text, scale labels and the
labels of its options, rows and columns, each ending's title and text, and
the hosted page's own words (its buttons and its "required" message).
Blocks are named by question key, or by position ("0", "1", ...) for
headings and paragraphs; options, rows and columns by value. What a
translation leaves out shows in the form's own language, and the API lists
it (`missingTranslations`). Answers never change with the language: they
are option values, not labels.
"""

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from formsapi.kit.schemas import CleanStr, Schema

LANGUAGE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$"
Language = Annotated[str, Field(pattern=LANGUAGE_PATTERN, max_length=35)]
MAX_LANGUAGES = 20
Text = Annotated[CleanStr, Field(min_length=1, max_length=5000)]
Labels = Annotated[
    dict[str, Annotated[CleanStr, Field(min_length=1, max_length=200)]], Field(max_length=1000)
]

# The hosted page's own words, and what it says in the form's language
# when a translation does not say them.
MESSAGES: dict[str, str] = {
    "next": "Next",
    "back": "Back",
    "send": "Send",
    "save": "Save and continue later",
    "required": "is required",
    "language": "Language",
    "page": "Page {number} of {total}",
    "fix_one": "Please correct 1 answer",
    "fix_many": "Please correct {count} answers",
    "file_limit": "One file, {size} at most.",
    "file_limits": "Up to {count} files, {size} each at most.",
    "file_script": "Uploading files needs JavaScript to be on.",
    "remove": "Remove",
    "uploading": "Uploading {name}…",
    "uploaded": "{name} is uploaded.",
    "too_large": "{name} is larger than {size}.",
    "too_many": "At most {count} file(s).",
    "upload_failed": "{name} could not be uploaded: {reason}",
    # Any other answer's error; empty: the check's own words (in English).
    "invalid": "",
    "thanks": "Thank you",
    "received": "Your answers to “{title}” were received.",
}
Message = Literal[
    "next",
    "back",
    "send",
    "save",
    "required",
    "language",
    "page",
    "fix_one",
    "fix_many",
    "file_limit",
    "file_limits",
    "file_script",
    "remove",
    "uploading",
    "uploaded",
    "too_large",
    "too_many",
    "upload_failed",
    "invalid",
    "thanks",
    "received",
]

# A block's texts, as the API names them, and its labelled lists.
TEXTS = ("title", "description", "placeholder", "text", "minLabel", "maxLabel")
LISTS = ("options", "rows", "columns")


class BlockTexts(Schema):
    title: Text | None = None
    description: Text | None = None
    placeholder: Text | None = None
    text: Text | None = None
    min_label: Text | None = None
    max_label: Text | None = None
    options: Labels = Field(default_factory=dict, description="Labels by option value.")
    rows: Labels = Field(default_factory=dict, description="A matrix's row labels by value.")
    columns: Labels = Field(default_factory=dict, description="Its column labels by value.")


class EndingTexts(Schema):
    title: Text | None = None
    text: Text | None = None


class Translation(Schema):
    title: Annotated[CleanStr, Field(min_length=1, max_length=200)] | None = None
    blocks: Annotated[dict[str, BlockTexts], Field(max_length=1000)] = Field(
        default_factory=dict,
        description='By question key, or by position ("0", "1", ...) for headings and paragraphs.',
    )
    endings: Annotated[dict[str, EndingTexts], Field(max_length=50)] = Field(
        default_factory=dict, description="By ending key."
    )
    messages: dict[Message, Annotated[CleanStr, Field(min_length=1, max_length=200)]] = Field(
        default_factory=dict, description="The hosted page's buttons and its 'is required'."
    )


# What the language switcher of the hosted page shows for a tag it knows.
NAMES = {
    "ar": "العربية", "de": "Deutsch", "en": "English", "es": "Español", "fr": "Français",
    "it": "Italiano", "ja": "日本語", "nl": "Nederlands", "pl": "Polski", "pt": "Português",
    "sv": "Svenska", "tr": "Türkçe", "uk": "Українська", "zh": "中文",
}  # fmt: skip


def name_of(block: dict[str, Any], position: int) -> str:
    return (
        str(block.get("key") or position)
        if block.get("type") not in ("heading", "paragraph")
        else str(position)
    )


def check(
    blocks: list[dict[str, Any]],
    endings: list[dict[str, Any]],
    language: str,
    translations: dict[str, Translation],
) -> list[tuple[str, str]]:
    """(JSON pointer, problem) for translations of what the form does not have."""
    errors: list[tuple[str, str]] = []
    named = {name_of(block, i): block for i, block in enumerate(blocks)}
    ending_keys = {ending.get("key") for ending in endings}
    for tag, translation in translations.items():
        base = f"/translations/{tag}"
        if tag == language:
            errors.append((base, "is the form's own language: its texts are the blocks'"))
        for name, texts in translation.blocks.items():
            block = named.get(name)
            if block is None:
                errors.append((f"{base}/blocks/{name}", "no block has this key or position"))
                continue
            given = texts.model_dump(by_alias=True, exclude_none=True)
            for field in TEXTS:
                if field in given and field not in block:
                    errors.append((f"{base}/blocks/{name}/{field}", "the block has no such text"))
            for field in LISTS:
                values = {item.get("value") for item in block.get(field) or []}
                for value in given.get(field, {}):
                    if value not in values:
                        errors.append(
                            (f"{base}/blocks/{name}/{field}/{value}", "the block has no such value")
                        )
        for key in translation.endings:
            if key not in ending_keys:
                errors.append((f"{base}/endings/{key}", "no ending has this key"))
    return errors


def translate(
    title: str,
    blocks: list[dict[str, Any]],
    endings: list[dict[str, Any]],
    translation: Translation | None,
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The title, blocks and endings (as the API shows them) in a language:
    each text the translation gives, else the form's own."""
    if translation is None:
        return title, blocks, endings
    shown = []
    for position, block in enumerate(blocks):
        texts = translation.blocks.get(name_of(block, position))
        if texts is None:
            shown.append(block)
            continue
        given = texts.model_dump(by_alias=True, exclude_none=True)
        copy = dict(block)
        for field in TEXTS:
            if field in given and field in block:
                copy[field] = given[field]
        for field in LISTS:
            labels = given.get(field) or {}
            if labels and block.get(field):
                copy[field] = [
                    {**item, "label": labels.get(item.get("value"), item.get("label"))}
                    for item in block[field]
                ]
        shown.append(copy)
    shown_endings = []
    for ending in endings:
        said = translation.endings.get(ending.get("key", ""))
        given = said.model_dump(exclude_none=True) if said else {}
        shown_endings.append({**ending, **{k: v for k, v in given.items() if k in ending}})
    return translation.title or title, shown, shown_endings


def missing(
    blocks: list[dict[str, Any]], endings: list[dict[str, Any]], translation: Translation
) -> list[str]:
    """JSON pointers (into the form as the API shows it) of the texts a
    translation leaves in the form's own language."""
    pointers = [] if translation.title else ["/title"]
    for position, block in enumerate(blocks):
        texts = translation.blocks.get(name_of(block, position))
        given = texts.model_dump(by_alias=True, exclude_none=True) if texts else {}
        for field in TEXTS:
            if block.get(field) and field not in given:
                pointers.append(f"/blocks/{position}/{field}")
        for field in LISTS:
            labels = given.get(field) or {}
            for index, item in enumerate(block.get(field) or []):
                if item.get("value") not in labels:
                    pointers.append(f"/blocks/{position}/{field}/{index}/label")
    for index, ending in enumerate(endings):
        said = translation.endings.get(ending.get("key", ""))
        given = said.model_dump(exclude_none=True) if said else {}
        for field in ("title", "text"):
            if ending.get(field) and field not in given:
                pointers.append(f"/endings/{index}/{field}")
    return pointers


def pick(wanted: str, available: list[str]) -> str | None:
    """The available language for a wanted tag: itself, or its primary
    language ("fr" for "fr-CA"), or one of its regions ("pt-BR" for "pt")."""
    wanted = wanted.strip()
    if not re.fullmatch(LANGUAGE_PATTERN, wanted, flags=re.IGNORECASE):
        return None
    lowered = {tag.lower(): tag for tag in available}
    if wanted.lower() in lowered:
        return lowered[wanted.lower()]
    primary = wanted.split("-")[0].lower()
    if primary in lowered:
        return lowered[primary]
    return next((tag for tag in available if tag.lower().split("-")[0] == primary), None)


def negotiate(header: str, available: list[str]) -> str | None:
    """The best of `available` for an Accept-Language header, by its q-values."""
    choices = []
    for order, part in enumerate(header.split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                continue
        if tag and tag != "*" and quality > 0:
            choices.append((-quality, order, tag))
    for _, _, tag in sorted(choices):
        if (found := pick(tag, available)) is not None:
            return found
    return None
