"""Realistic demo forms and submissions, for trying the API and for benchmarks.

Answers are drawn per question type so that every one of them satisfies the
form's own JSON Schema; submission times spread over past months with growth
and weekday rhythm, like a real form's.
"""

import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from formsapi.demo.data import COMPANIES, FIRST, LAST, SENTENCES, SUMMARIES, TEMPLATES
from formsapi.form import service as form_service
from formsapi.kit.time import utcnow
from formsapi.language.blocks import Block, BlockList, MultipleChoice, Number, Rating, questions
from formsapi.models import Form, Submission
from formsapi.submission import repository as submission_repository
from formsapi.submission import service as submission_service
from formsapi.tenancy import scoped


@dataclass
class _Person:
    first: str
    last: str
    number: int

    @property
    def email(self) -> str:
        return f"{self.first.lower()}.{self.last.lower()}{self.number}@example.com".translate(
            str.maketrans("éíóüç", "eiouc")
        )


def _short_text(key: str, person: _Person, rng: random.Random) -> str:
    if "name" in key:
        return person.first if key == "first_name" else f"{person.first} {person.last}"
    if key == "company":
        return rng.choice(COMPANIES)
    if key == "summary":
        return rng.choice(SUMMARIES)
    return rng.choice(SENTENCES)[:60].rstrip(" ,.")


def _answer(question: Any, person: _Person, rng: random.Random) -> str | int | float:
    kind = question.type
    if kind == "short_text":
        return _short_text(question.key, person, rng)[: question.max_length or 255]
    if kind == "long_text":
        text = " ".join(rng.sample(SENTENCES, rng.randint(1, 3)))
        return text[: question.max_length or 10_000]
    if kind == "email":
        return person.email
    if kind == "url":
        return f"https://github.com/{person.first.lower()}{person.number}".translate(
            str.maketrans("éíóüç", "eiouc")
        )
    if kind == "phone":
        return f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    if kind == "date":
        return (date(2026, 1, 5) + timedelta(days=rng.randint(0, 330))).isoformat()
    if isinstance(question, Rating):
        # Skewed towards the top, as satisfaction scores are.
        return max(1, question.scale - int(rng.expovariate(0.6)))
    if isinstance(question, Number):
        low = question.min if question.min is not None else 0
        high = question.max if question.max is not None else 1000
        if question.integer:
            return rng.randint(int(low), min(int(high), int(low) + 25))
        return (
            round(rng.uniform(low, high) / 100) * 100
            if high > 10000
            else round(rng.uniform(low, high), 1)
        )
    values = [option.value for option in question.options]
    if isinstance(question, MultipleChoice):
        low = question.min_selections or 1
        high = question.max_selections or len(values)
        chosen = set(rng.sample(values, rng.randint(low, high)))
        return ",".join(value for value in values if value in chosen)
    weights = [len(values) - index for index in range(len(values))]
    return str(rng.choices(values, weights=weights)[0])


def answers_for(blocks: list[Block], rng: random.Random) -> dict[str, str | int | float]:
    """One respondent's answers: required questions always, optional ones mostly."""
    person = _Person(rng.choice(FIRST), rng.choice(LAST), rng.randint(1, 999))
    return {
        question.key: _answer(question, person, rng)
        for question in questions(blocks)
        if question.required or rng.random() < 0.7
    }


def _times(count: int, start: datetime, end: datetime, rng: random.Random) -> Iterator[datetime]:
    """Times between start and end, denser towards the end (a growing form)."""
    span = (end - start).total_seconds()
    for _ in range(count):
        moment = start + timedelta(seconds=span * (rng.random() ** 0.7))
        yield moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    """Uneven shares, like real forms: one popular, a long tail."""
    weights = [rng.paretovariate(1.2) for _ in range(parts)]
    shares = [int(total * weight / sum(weights)) for weight in weights]
    shares[0] += total - sum(shares)
    return shares


async def fill(
    session: AsyncSession,
    organization_id: str,
    *,
    forms: int = 8,
    submissions: int = 2000,
    months: int = 6,
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
    chunk_size: int = 5000,
) -> list[Form]:
    """Create `forms` forms and `submissions` submissions spread among the
    non-draft ones. Returns the forms. Bulk inserts in chunks; the caller commits."""
    rng = random.Random(seed)  # noqa: S311 - demo data, not secrets
    now = utcnow()
    begin = now - timedelta(days=30 * months)
    created: list[Form] = []
    for index in range(forms):
        title, status, raw_blocks = TEMPLATES[index % len(TEMPLATES)]
        round_ = index // len(TEMPLATES)
        blocks = BlockList.validate_python(raw_blocks)
        created_at = begin - timedelta(days=rng.randint(1, 20), minutes=index)
        suffix = f" ({round_ + 1})" if round_ else ""
        form = await form_service.create(
            session,
            organization_id,
            title + suffix,
            blocks,
            status=status,
            created_at=created_at,
            form_id="frm_" + str(ULID.from_datetime(created_at)).lower(),
        )
        created.append(form)
    await session.flush()

    answerable = [form for form in created if form.status != "draft"] or created
    shares = _split(submissions, len(answerable), rng) if answerable else []
    for form, share in zip(answerable, shares, strict=True):
        blocks = BlockList.validate_python(form.blocks)
        end = now if form.status == "published" else now - timedelta(days=rng.randint(10, 40))
        rows: list[dict[str, Any]] = []
        hours: Counter[datetime] = Counter()
        # Numbered in time order, as they would have committed.
        for seq, moment in enumerate(sorted(_times(share, begin, end, rng)), start=1):
            hours[submission_repository.hour_of(moment)] += 1
            rows.append(
                {
                    "id": "sub_" + str(ULID.from_datetime(moment)).lower(),
                    "organization_id": organization_id,
                    "form_id": form.id,
                    "form_version": 1,
                    "submitted_at": moment,
                    "answers": answers_for(blocks, rng),
                    "change_seq": seq,
                }
            )
            if len(rows) == chunk_size:
                await _insert(session, rows, progress)
                rows = []
        if rows:
            await _insert(session, rows, progress)
        # The counters move in the same transaction as the rows they count.
        await submission_repository.add_counts(session, organization_id, form.id, hours)
        await session.execute(
            update(Form)
            .where(scoped(Form, organization_id), Form.id == form.id)
            .values(response_count=Form.response_count + share, change_seq=Form.change_seq + share)
        )
    # The rows went in directly: their answers are counted from them.
    await submission_service.recount_answers(session, organization_id)
    return created


async def _insert(
    session: AsyncSession, rows: list[dict[str, Any]], progress: Callable[[int], None] | None
) -> None:
    await session.execute(insert(Submission), rows)
    if progress:
        progress(len(rows))
