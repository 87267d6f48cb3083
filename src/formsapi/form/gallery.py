"""Forms to start from: each a form's JSON (POST /v1/forms's body) kept
beside this module, checked by the same schema as the API's."""

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from formsapi.form.schemas import FormCreate

_FILES = Path(__file__).parent / "templates"


@dataclass(frozen=True, slots=True)
class Template:
    name: str  # its file's stem
    title: str
    description: str


TEMPLATES = (
    Template("feedback", "Product feedback", "A rating, what people like, and what to improve."),
    Template(
        "nps", "Net Promoter Score", "The 0-10 question, the reason, and an ending per group."
    ),
    Template(
        "event_registration",
        "Event registration",
        "Name and email, then sessions, dietary and accessibility needs.",
    ),
    Template(
        "job_application",
        "Job application",
        "Contact details, the role, experience and a CV upload.",
    ),
    Template("bug_report", "Bug report", "Severity, steps to reproduce and screenshots."),
    Template("contact", "Contact us", "Name, email, topic and message."),
    Template("quiz", "Scored quiz", "Four questions, a score kept by logic, and a perfect ending."),
)
BY_NAME = {template.name: template for template in TEMPLATES}


@cache
def body(name: str) -> FormCreate:
    """The template's form, as the API would take it (KeyError if unknown)."""
    template = BY_NAME[name]
    return FormCreate.model_validate_json((_FILES / f"{template.name}.json").read_bytes())
