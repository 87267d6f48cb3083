"""Plain typed factories: each writes through the real services or models."""

import random
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.api_key import service as api_key_service
from formsapi.api_key.scopes import Scope
from formsapi.config import Settings
from formsapi.form import repository as form_repository
from formsapi.form import service as form_service
from formsapi.kit.ids import new_id
from formsapi.kit.time import utcnow
from formsapi.language import compiled
from formsapi.language.blocks import BlockList
from formsapi.member import service as member_service
from formsapi.models import Form, Organization, Plan, Role, Submission, User
from formsapi.organization import service as organization_service
from formsapi.submission import repository as submission_repository
from formsapi.user import service as user_service
from formsapi.webhook.service import secret_box
from formsapi.webhook.worker import Worker

if TYPE_CHECKING:
    from tests.conftest import Api

EVERY_SCOPE = [str(scope) for scope in Scope]

BLOCKS: list[dict[str, Any]] = [
    {"type": "heading", "text": "About you"},
    {"type": "short_text", "key": "name", "title": "Name", "required": True},
    {"type": "email", "key": "email", "title": "Email"},
    {"type": "number", "key": "age", "title": "Age", "min": 0, "max": 130, "integer": True},
    {"type": "page_break"},
    {
        "type": "multiple_choice",
        "key": "colors",
        "title": "Colors",
        "required": True,
        "options": [{"value": "red", "label": "Red"}, {"value": "blue", "label": "Blue"}],
    },
]


async def create_org(session: AsyncSession, plan: str = Plan.standard) -> Organization:
    return await organization_service.create(session, "Org", plan)


async def create_user(session: AsyncSession, email: str | None = None) -> User:
    return await user_service.create(
        session, email or f"{new_id('u')}@example.com", "correct horse battery"
    )


async def create_key(
    session: AsyncSession,
    organization: Organization,
    *,
    role: str = Role.owner,
    scopes: list[str] | None = None,
    user: User | None = None,
) -> tuple[str, str]:
    """A member with `role` and a key of theirs; returns (key id, secret)."""
    user = user or await create_user(session)
    await member_service.add_directly(session, organization.id, user, role)
    created = await api_key_service.create(session, organization, user, "test", scopes)
    return created.key.id, created.secret


async def create_form(
    session: AsyncSession,
    organization: Organization,
    *,
    title: str = "Form",
    status: str = "published",
    created_at: datetime | None = None,
    blocks: list[dict[str, Any]] | None = None,
    form_id: str | None = None,
) -> Form:
    return await form_service.create(
        session,
        organization.id,
        title,
        BlockList.validate_python(blocks if blocks is not None else BLOCKS),
        slug=new_id("s").replace("_", "-"),
        status=status,
        created_at=created_at,
        form_id=form_id,
    )


async def create_submission(
    session: AsyncSession,
    form: Form,
    *,
    submitted_at: datetime | None = None,
    answers: dict[str, Any] | None = None,
    submission_id: str | None = None,
) -> Submission:
    change_seq = await form_repository.next_change(session, form.organization_id, form.id, 1)
    assert change_seq is not None
    submission = Submission(
        id=submission_id or new_id("sub"),
        organization_id=form.organization_id,
        form_id=form.id,
        submitted_at=submitted_at or utcnow(),
        answers=answers if answers is not None else {"name": "Ada", "colors": "red"},
        change_seq=change_seq,
    )
    session.add(submission)
    await session.flush()
    await submission_repository.add_counts(
        session,
        form.organization_id,
        form.id,
        {submission_repository.hour_of(submission.submitted_at): 1},
    )
    # Its answers counted as a post's are (by the form's blocks as they are).
    blocks = compiled.compile_version(
        form.organization_id, form.id, form.version, form.blocks, form.definition
    )
    await submission_repository.add_tally(
        session,
        form.organization_id,
        form.id,
        submission.form_version,
        submission.submitted_at,
        submission_repository.tally(blocks.counted, submission.answers, None),
    )
    return submission


def new_worker(engine: AsyncEngine, settings: Settings, seed: int = 0) -> Worker:
    """A webhook worker on `engine`, as `formsapi worker` makes one, its
    retries' jitter drawn from `seed`. Close it when done."""
    box = secret_box(settings)
    assert box is not None, "the settings need a secret key"
    return Worker(
        async_sessionmaker(engine, expire_on_commit=False),
        settings,
        box,
        rng=random.Random(seed),  # noqa: S311 - jitter, not a secret
    )


PLAN: dict[str, Any] = {
    "type": "single_choice",
    "key": "plan",
    "title": "Plan",
    "options": [
        {"value": "personal", "label": "Personal"},
        {"value": "business", "label": "Business"},
    ],
}


async def publish_over_api(
    api: "Api", session: AsyncSession, form: dict[str, Any]
) -> tuple[str, str, str]:
    """A new organization's form, created and published over the API (as a
    builder would send it): its id, a key with every scope, the organization."""
    org = await create_org(session)
    _, secret = await create_key(session, org, scopes=EVERY_SCOPE)
    await session.commit()
    created = await api.post("/v1/forms", secret, json=form)
    assert created.status_code == 201, created.text
    form_id = created.json()["id"]
    published = await api.patch(f"/v1/forms/{form_id}", secret, json={"status": "published"})
    assert published.status_code == 200, published.text
    return form_id, secret, org.id
