"""Text that breaks naive code, in one table for every test that feeds a
field hostile input (issue 25: no URL field answers 500 on any byte), and
the places in a URL, an origin or a redirect target to put it.

Each entry is one character (or a short word) that some layer mishandles:
controls that parsers strip, refuse or pass on raw (NUL breaks PostgreSQL,
CR and LF headers, TAB and LF vanish in a browser's URL parser), invisible
and bidirectional characters, what IDNA maps to a dot, Unicode digits that
`\\d` and `int()` take, non-characters, and a lone surrogate, which no
encoder takes. Send a table entry through `json_body` or `form_body`: they
put the lone surrogate on the wire the way a broken client does.
"""

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Hostile:
    name: str  # "U+0000 Cc", "U+200B ZERO WIDTH SPACE": names the case in a failure
    text: str


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate code point: sent as JSON, the API
    refuses it as not I-JSON (400) before any field is looked at."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _named(code: int) -> Hostile:
    ch = chr(code)
    category = unicodedata.category(ch)  # controls have no name, only Cc
    name = "LONE SURROGATE" if category == "Cs" else unicodedata.name(ch, category)
    return Hostile(f"U+{code:04X} {name}", ch)


_UNICODE = [
    0x00A0,  # no-break space
    0x00AD,  # soft hyphen: invisible, and IDNA drops it
    0x034F,  # combining grapheme joiner
    0x115F,  # Hangul choseong filler: blank
    0x180E,  # Mongolian vowel separator: whitespace in old Unicode, not now
    *range(0x200B, 0x2010),  # zero-width space, joiners, LRM, RLM
    0x2028,  # line separator: str.splitlines() splits on it
    0x2029,  # paragraph separator
    *range(0x202A, 0x202F),  # bidirectional embeddings and overrides
    0x2060,  # word joiner
    *range(0x2066, 0x206A),  # bidirectional isolates
    0x3000,  # ideographic space
    0x3002,  # ideographic full stop: IDNA maps it to "."
    0xFF0E,  # fullwidth full stop: so does NFKC
    0xFF0F,  # fullwidth solidus: NFKC makes it "/" (urlsplit raises on it in a host)
    0x0661,  # Arabic-Indic digit one: re's \d and int() take it
    0xFF11,  # fullwidth digit one: the same
    0x0130,  # capital I with dot: lower() makes it two characters
    0x212A,  # Kelvin sign: lower() makes it an ASCII "k"
    0xFE0F,  # variation selector-16
    0xFEFF,  # byte order mark, zero-width no-break space
    0xFFFD,  # replacement character
    0xFFFE,  # non-characters
    0xFFFF,
    0x0301,  # a combining mark (acute accent) with nothing to combine with
    0x1F600,  # an emoji, outside the Basic Multilingual Plane
    0x10FFFF,  # a non-character in a supplementary plane, the last code point
    0xD800,  # a lone surrogate: json_body sends the JSON escape "\ud800"
]

TABLE: tuple[Hostile, ...] = (
    *(_named(code) for code in range(0x20)),  # C0 controls
    _named(0x7F),  # DEL
    *(_named(code) for code in range(0x80, 0xA0)),  # C1 controls
    *(_named(code) for code in _UNICODE),
    Hostile("an RTL word (Arabic)", "\u0645\u062b\u0627\u0644"),
)
"""Every entry to send to a field that takes text."""

BROKEN_URLS: tuple[str, ...] = (
    "http://[",  # urlsplit: "Invalid IPv6 URL"
    "https://[::1",
    "https://[v1.x]/",
    "https://example.com]/",
    "https://example.com:99999/",
    "https://example.com:-1/",
    "https://example.com:443:443/",
    "https://:443/",
    "https://",
    "https:///hook",
    "https://user:pass@example.com/",
    "//example.com/",
    "https://example.com/%",
    "https://example.com/%zz%00",
    "https://xn--/",
    "https://xn--zz.com/",
    "https://" + "a" * 64 + ".com/",
    "https://example.com/" + "a" * 3000,
)
"""Whole URLs whose shape breaks parsers: for fields that take a URL."""

# Where a character goes. Places that every parser treats alike share one
# URL (the path and the query; the leading and trailing edges, which strip()
# takes both): each case is a request, and the table is long.

URL_PLACES = {
    "host": "https://ex{}ample.com/hook",
    "path and query": "https://example.com/ho{}ok?q=a{}b",
    "edges": "{}https://example.com/hook{}",
}
"""In an absolute URL."""

ORIGIN_PLACES = {
    "host": "https://ex{}ample.com",
    "port": "https://example.com:44{}",  # \d and int() take any script's digits
    "edges": "{}https://example.com{}",
}
"""In an origin (scheme://host[:port]): any path makes it no origin."""

PATH_PLACES = {
    "path and query": "/settings/ke{}ys?q=a{}b",
    "leading": "{}/settings/keys",
    "trailing": "/settings/keys{}",
    # A browser drops TAB, CR and LF from a URL: "/\t/evil.example" is "//evil.example".
    "between slashes": "/{}/evil.example/",
}
"""In a redirect target of this site (a `next`): a path, never "//"."""


def placed(places: dict[str, str], entry: Hostile) -> Iterator[tuple[str, str]]:
    """(what, text) for `entry` in each of `places`: what names the case in a failure."""
    for place, template in places.items():
        yield f"{entry.name} in the {place}", template.replace("{}", entry.text)


def placed_all(places: dict[str, str]) -> list[tuple[str, str]]:
    """Every table entry in every one of `places`."""
    return [case for entry in TABLE for case in placed(places, entry)]


def url_cases(places: dict[str, str] = URL_PLACES) -> list[tuple[str, str]]:
    """Every table entry in every one of `places`, then the broken URLs whole."""
    return placed_all(places) + [(f"broken URL {url[:60]!r}", url) for url in BROKEN_URLS]


def json_body(body: Any) -> bytes:
    """The body as JSON, UTF-8 as it is where it can be, and a lone surrogate
    as the escape "\\ud800" (valid JSON syntax, refused as I-JSON: 400)."""
    text = json.dumps(body, ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(body).encode()  # every non-ASCII character escaped


def percent_encoded(text: str) -> str:
    """`text` as a form or query string carries it; a lone surrogate as the
    bytes of its would-be UTF-8 (%ED%A0%80), as a broken client sends it."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def form_body(fields: dict[str, str]) -> bytes:
    """An application/x-www-form-urlencoded body of `fields`."""
    return "&".join(f"{quote(k)}={percent_encoded(v)}" for k, v in fields.items()).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def raw_control(text: str) -> str | None:
    """The first C0, DEL or C1 control character in `text`, shown, or None."""
    found = _CONTROL.search(text)
    return None if found is None else f"U+{ord(found[0]):04X}"
