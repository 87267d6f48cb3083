from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Invitation, Membership, Organization, Role, User
from formsapi.tenancy import scoped, unscoped


async def organizations_of(session: AsyncSession, user_id: str) -> Sequence[Row[Organization, str]]:
    statement = (
        select(Organization, Membership.role)
        .join(Membership, Organization.id == Membership.organization_id)
        .where(Membership.user_id == user_id)
        .order_by(Organization.name, Organization.id)
    )
    statement = unscoped(statement, "a person's own memberships, in every organization")
    return (await session.execute(statement)).all()


async def list_members(
    session: AsyncSession, organization_id: str
) -> Sequence[Row[User, Membership]]:
    statement = (
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(scoped(Membership, organization_id))
        .order_by(User.email)
    )
    return (await session.execute(statement)).all()


async def get_member(
    session: AsyncSession, organization_id: str, user_id: str, *, for_update: bool = False
) -> Row[User, Membership] | None:
    statement = (
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(scoped(Membership, organization_id), Membership.user_id == user_id)
    )
    if for_update:
        statement = statement.with_for_update(of=Membership)
    return (await session.execute(statement)).first()


async def is_member_by_email(session: AsyncSession, organization_id: str, email: str) -> bool:
    statement = (
        select(Membership.user_id)
        .join(User, User.id == Membership.user_id)
        .where(scoped(Membership, organization_id), User.email == email)
    )
    return await session.scalar(statement) is not None


async def lock_owners(session: AsyncSession, organization_id: str) -> int:
    """How many owners the organization has, their rows locked until commit, so
    two owners demoting each other at once cannot leave it with none."""
    owners = select(Membership.user_id).where(
        scoped(Membership, organization_id), Membership.role == Role.owner
    )
    rows = (await session.execute(owners.with_for_update())).all()
    return len(rows)


async def delete_membership(session: AsyncSession, organization_id: str, user_id: str) -> None:
    await session.execute(
        delete(Membership).where(scoped(Membership, organization_id), Membership.user_id == user_id)
    )


async def pending_invitations(session: AsyncSession, organization_id: str) -> Sequence[Invitation]:
    statement = (
        select(Invitation).where(scoped(Invitation, organization_id)).order_by(Invitation.email)
    )
    return (await session.scalars(statement)).all()


async def get_invitation_in(
    session: AsyncSession, organization_id: str, invitation_id: str
) -> Invitation | None:
    return await session.scalar(
        select(Invitation).where(
            scoped(Invitation, organization_id), Invitation.id == invitation_id
        )
    )


async def get_invitation_by_email(
    session: AsyncSession, organization_id: str, email: str
) -> Invitation | None:
    return await session.scalar(
        select(Invitation).where(scoped(Invitation, organization_id), Invitation.email == email)
    )


async def delete_invitation(session: AsyncSession, organization_id: str, email: str) -> None:
    await session.execute(
        delete(Invitation).where(scoped(Invitation, organization_id), Invitation.email == email)
    )


async def find_invitation(
    session: AsyncSession, token_hash: str, now: datetime, *, for_update: bool = False
) -> Row[Invitation, Organization] | None:
    """An unexpired invitation by its token, with its organization: the one
    lookup that is not scoped to an organization, because the token is how its
    holder names one."""
    statement = (
        select(Invitation, Organization)
        .join(Organization, Organization.id == Invitation.organization_id)
        .where(Invitation.token_hash == token_hash, Invitation.expires_at > now)
    )
    if for_update:
        statement = statement.with_for_update(of=Invitation)
    statement = unscoped(statement, "the link's token is how its organization is found")
    return (await session.execute(statement)).first()
