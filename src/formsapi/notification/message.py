"""What a notification mail says, built with `email.message.EmailMessage`,
which refuses a header with a line break, from text partly written by
respondents: their answers go in the body only, as plain text, and the one
address they choose (the copy's) is checked to be exactly one address first.

A member's mail carries the answers as sent. A respondent's copy goes to an
address whoever fills the form in chooses, so it carries the form's own
words only: the labels of what was picked, scales, dates and times, never
an answer typed (a text, a number, an address, a link, an Other's text, a
file), a hidden field or a recalled answer. The form cannot carry anyone's
text to a stranger's inbox."""

import re
from collections.abc import Mapping
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Any

from formsapi.language.blocks import (
    EMAIL,
    OTHER,
    Block,
    Date,
    DateTime,
    FileUpload,
    MatrixRow,
    MultipleChoice,
    Nps,
    Part,
    Ranking,
    Rating,
    Scale,
    SingleChoice,
    Time,
    YesNo,
    parts,
)
from formsapi.language.definition import RECALL

MAX_ANSWER = 2000  # characters of one answer in a mail; the page has them all
TYPED = "(typed: not repeated in this mail)"
# Characters no header or one-line answer should carry: controls, and the
# separators Unicode treats as line breaks.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def message_id(mail_id: str) -> str:
    """The mail's Message-ID: its outbox row's, the same on every attempt, so
    a resend after a crash is recognisable as the same mail."""
    return f"<{mail_id}@formsapi>"


def single_address(value: object) -> str | None:
    """`value` if it is exactly one plain address (no display name, no
    list, no line break or control character, as the email question
    accepts), else None: never a header of several recipients."""
    if not isinstance(value, str) or len(value) > 254 or _CONTROLS.search(value):
        return None
    if not EMAIL.fullmatch(value) or any(c in value for c in ',;<>()"\\[]:'):
        return None
    if len(getaddresses([value])) != 1:
        return None
    try:
        address = Address(addr_spec=value)
    except (ValueError, IndexError):
        return None
    return value if address.addr_spec == value else None


def one_line(text: str, limit: int = 200) -> str:
    """A header's text: controls turned into spaces, cut to `limit`."""
    flat = _CONTROLS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _answer_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_answer_text(item) for item in value)
    if isinstance(value, dict):
        return "; ".join(f"{key}: {_answer_text(item)}" for key, item in value.items())
    text = str(value)
    return text if len(text) <= MAX_ANSWER else text[:MAX_ANSWER] + "…"


def answers_text(blocks: list[Block], answers: Mapping[str, Any]) -> str:
    """The answers under their questions, in the form's order; unanswered
    questions left out, an uploaded file named as one (its bytes stay on the
    server)."""
    uploads = {block.key for block in blocks if isinstance(block, FileUpload)}
    lines = []
    for key, part in parts(blocks):
        if key not in answers or answers[key] in (None, "", []):
            continue
        value = "(a file, on the form's page)" if key in uploads else _answer_text(answers[key])
        indented = "\n  ".join(value.splitlines()) or value
        lines.append(f"{one_line(part.title, 500)}\n  {indented}")
    return "\n\n".join(lines) if lines else "(no answers)"


def _label(choice: SingleChoice | MultipleChoice | Ranking, value: str) -> str:
    if value == OTHER and choice.allow_other:
        return "Other"
    return next(option.label for option in choice.options if option.value == value)


def picked(part: Part, value: Any) -> str | None:
    """A copy's text for an answer picked from what the form offers (an
    option's label, a point of a scale) or a date or time, which hold no
    one's words; None for anything typed, and for an answer its question
    would not take now."""
    if part.check_answer(value)[1] is not None:
        return None
    if isinstance(part, SingleChoice):
        return _label(part, value)
    if isinstance(part, MultipleChoice | Ranking):
        return ", ".join(_label(part, chosen) for chosen in value.split(","))
    if isinstance(part, MatrixRow):
        return next(c.label for c in part.matrix.columns if c.value == value)
    if isinstance(part, YesNo):
        return "Yes" if value == "yes" else "No"
    if isinstance(part, Rating):
        return f"{value} of {part.scale}"
    if isinstance(part, Nps | Scale):
        low, high = part.bounds()
        return f"{value} ({low} to {high})"
    if isinstance(part, Date | Time | DateTime):
        return str(value)
    return None


def _without_recall(text: str) -> str:
    # A title that recalls an answer ("Thanks, {{name}}") shows its fallback instead.
    return RECALL.sub(lambda found: (found.group(2) or "…").strip(), text)


def copy_text(blocks: list[Block], answers: Mapping[str, Any]) -> str:
    """A respondent's copy: each question answered, in the form's order, with
    what was picked, or a word that the answer was typed."""
    lines = []
    for key, part in parts(blocks):
        if key not in answers or answers[key] in (None, "", []):
            continue
        shown = picked(part, answers[key]) or TYPED
        lines.append(f"{one_line(_without_recall(part.title), 500)}\n  {shown}")
    return "\n\n".join(lines) if lines else "(no answers)"


def build(sender: str, to: str, subject: str, text: str, mail_id: str) -> EmailMessage:
    """A plain-text mail. Raises ValueError for an address or subject a
    header cannot carry."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = one_line(subject)
    message["Message-ID"] = message_id(mail_id)
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no auto-replies to it
    message.set_content(text)
    return message


def submission_text(
    form_title: str, submitted_at: datetime, answers: str, link: str, *, copy: bool
) -> str:
    when = submitted_at.strftime("%Y-%m-%d %H:%M UTC")
    if copy:
        return (
            f"Thank you for answering “{form_title}”. "
            f"Here is a copy of what you sent on {when}. "
            "Answers you typed are not repeated: this mail carries only the form's "
            f"own words.\n\n{answers}\n"
        )
    return (
        f"A new response to “{form_title}” arrived on {when}.\n\n{answers}\n\n"
        f"All responses: {link}\n"
    )


def digest_text(form_title: str, day: datetime, count: int, link: str) -> str:
    responses = f"{count} new response{'s' * (count != 1)}"
    return f"“{form_title}” received {responses} on {day:%Y-%m-%d} (UTC).\n\nSee them: {link}\n"
