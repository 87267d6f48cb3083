"""Organizations: the tenants, each on a plan. Who belongs to one is the
member domain's concern."""

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.errors import BadRequest, NotFound
from formsapi.kit.ids import new_id
from formsapi.models import Organization, Plan
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
