"""Organizations: the tenants, each on a plan. Who belongs to one is the
member domain's concern."""

import re
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, Forbidden, NotFound
from formsapi.kit.ids import new_id
from formsapi.models import Organization, Plan, Role
from formsapi.organization import repository

MAX_NAME_LENGTH = 200


async def create(session: AsyncSession, name: str, plan: str = Plan.standard) -> Organization:
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise BadRequest(f"An organization needs a name of 1 to {MAX_NAME_LENGTH} characters.")
    if plan not in Plan.__members__:
        raise BadRequest(f"Unknown plan '{plan}'; choose one of: {', '.join(Plan)}.")
    organization = Organization(id=new_id("org"), name=name, plan=plan)
    session.add(organization)
    await session.flush()
    return organization


async def get(session: AsyncSession, organization_id: str) -> Organization:
    organization = await repository.get(session, organization_id)
    if organization is None:
        raise NotFound(f"No organization with id '{organization_id}'.")
    return organization


MAX_EMBED_ORIGINS = 20
# scheme://host[:port], the host optionally led by "*." (its subdomains): what
# CSP's frame-ancestors takes as a source, and nothing it would read otherwise.
# ASCII only, digits included: \d takes any script's (U+0661 is one), and an
# origin goes into a header, which is Latin-1.
_ORIGIN = re.compile(
    r"https?://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?"
)


ORIGIN_RULE = "scheme://host[:port], no path"


def normalized_origin(raw: str) -> str | None:
    """`raw` as frame-ancestors takes it (lower case, no trailing slash), or
    None when it is not an origin: the one rule for the organization's list
    and a form's own."""
    origin = raw.lower().rstrip("/")
    return origin if _ORIGIN.fullmatch(origin) else None


def parse_origins(text: str) -> list[str]:
    """One origin a line (or separated by spaces or commas), normalized;
    BadRequest naming each one that is not an origin."""
    origins: list[str] = []
    wrong: list[str] = []
    for raw in re.split(r"[\s,]+", text.strip()):
        if not raw:
            continue
        origin = normalized_origin(raw)
        if origin is None:
            wrong.append(raw)
        elif origin not in origins:
            origins.append(origin)
    if wrong:
        raise BadRequest(
            f"Not an origin ({ORIGIN_RULE}): " + ", ".join(w[:100] for w in wrong[:5]) + "."
        )
    if len(origins) > MAX_EMBED_ORIGINS:
        raise BadRequest(f"At most {MAX_EMBED_ORIGINS} origins.")
    return origins


async def set_embed_origins(
    session: AsyncSession, organization_id: str, actor_role: str, text: str
) -> list[str]:
    """The sites whose pages may show the organization's hosted forms in a frame."""
    if actor_role not in (Role.owner, Role.admin):
        raise Forbidden("Only owners and admins change the organization's settings.")
    origins = parse_origins(text)
    await repository.set_embed_origins(session, organization_id, origins)
    return origins


async def all_ids(session: AsyncSession) -> Sequence[str]:
    """Every organization's id: for maintenance that visits each."""
    return await repository.all_ids(session)
