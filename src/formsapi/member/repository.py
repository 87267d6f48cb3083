from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import Invitation, Membership, Organization, Role, User


async def organizations_of(session: AsyncSession, user_id: str) -> Sequence[Row[Organization, str]]:
    statement = (
        select(Organization, Membership.role)
        .join(Membership, Membership.organization_id == Organization.id)
        .where(Membership.user_id == user_id)
        .order_by(Organization.name, Organization.id)
    )
    return (await session.execute(statement)).all()


async def list_members(
    session: AsyncSession, organization_id: str
) -> Sequence[Row[User, Membership]]:
    statement = (
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.organization_id == organization_id)
        .order_by(User.email)
    )
    return (await session.execute(statement)).all()


async def get_member(
    session: AsyncSession, organization_id: str, user_id: str, *, for_update: bool = False
) -> Row[User, Membership] | None:
    statement = (
        select(User, Membership)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.organization_id == organization_id, Membership.user_id == user_id)
    )
    if for_update:
        statement = statement.with_for_update(of=Membership)
    return (await session.execute(statement)).first()


async def lock_owners(session: AsyncSession, organization_id: str) -> int:
    """How many owners the organization has, their rows locked until commit, so
    two owners demoting each other at once cannot leave it with none."""
    owners = select(Membership.user_id).where(
        Membership.organization_id == organization_id, Membership.role == Role.owner
    )
    rows = (await session.execute(owners.with_for_update())).all()
    return len(rows)


async def delete_membership(session: AsyncSession, organization_id: str, user_id: str) -> None:
    await session.execute(
        delete(Membership).where(
            Membership.organization_id == organization_id, Membership.user_id == user_id
        )
    )
    await session.execute(
        delete(Invitation).where(
            Invitation.organization_id == organization_id, Invitation.user_id == user_id
        )
    )


async def get_invitation(
    session: AsyncSession, invitation_id: str, now: datetime
) -> Row[Invitation, User, Organization] | None:
    statement = (
        select(Invitation, User, Organization)
        .join(User, User.id == Invitation.user_id)
        .join(Organization, Organization.id == Invitation.organization_id)
        .where(Invitation.id == invitation_id, Invitation.expires_at > now)
    )
    return (await session.execute(statement)).first()


async def delete_invitations_of(session: AsyncSession, user_id: str) -> None:
    await session.execute(delete(Invitation).where(Invitation.user_id == user_id))


async def pending_invitations(
    session: AsyncSession, organization_id: str, now: datetime
) -> dict[str, datetime]:
    """user id -> when their newest unexpired invitation to this organization lapses."""
    statement = (
        select(Invitation.user_id, func.max(Invitation.expires_at))
        .where(Invitation.organization_id == organization_id, Invitation.expires_at > now)
        .group_by(Invitation.user_id)
    )
    rows = (await session.execute(statement)).all()
    return {row[0]: row[1] for row in rows}
