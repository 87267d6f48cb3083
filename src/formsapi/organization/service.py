"""Organizations (tenants, each on a plan) and the memberships that give users roles in them."""

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.epoch import mark_keys_changed
from formsapi.errors import BadRequest, NotFound
from formsapi.kit.ids import new_id
from formsapi.member import repository as member_repository
from formsapi.member.service import LastOwner
from formsapi.models import Membership, Organization, Plan, Role, User
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


async def add_member(
    session: AsyncSession, organization: Organization, user: User, role: str
) -> Membership:
    """Add the user with `role`, or change their role if they are a member already."""
    if role not in Role.__members__:
        raise BadRequest(f"Unknown role '{role}'; choose one of: {', '.join(Role)}.")
    owners = await member_repository.lock_owners(session, organization.id)
    membership = await repository.get_membership(session, organization.id, user.id)
    demoting_owner = membership is not None and membership.role == Role.owner
    if demoting_owner and role != Role.owner and owners <= 1:
        raise LastOwner()
    if membership is None:
        membership = Membership(organization_id=organization.id, user_id=user.id, role=role)
        session.add(membership)
    else:
        membership.role = role
        # What the member's keys may do follows their role at once.
        mark_keys_changed(session)
    await session.flush()
    return membership
