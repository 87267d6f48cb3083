"""Members of an organization: added by email, given roles, removed.

Owners and admins manage members; only an owner makes, changes or removes an
owner, and an organization always keeps at least one. A person added without
an account gets one with no password and an invitation link, shown once to
whoever added them, through which they choose it. A role change or a removal
moves the auth epoch: what the member's API keys may do follows at once.
"""

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key.epoch import mark_keys_changed
from formsapi.errors import BadRequest, Conflict, Forbidden, NotFound
from formsapi.kit.time import utcnow
from formsapi.member import repository
from formsapi.models import Invitation, Membership, Organization, Role, User
from formsapi.user import repository as user_repository
from formsapi.user import service as user_service

INVITATION_LIFETIME = timedelta(days=7)
MANAGERS = frozenset({Role.owner, Role.admin})


class MemberNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("No such member in this organization.")


class LastOwner(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "An organization must keep at least one owner: make someone else owner first."
        )


class InvitationNotValid(NotFound):
    def __init__(self) -> None:
        super().__init__(
            "This invitation link is not valid: it was used, it expired, or it was replaced. "
            "Ask for a new one."
        )


@dataclass(frozen=True, slots=True)
class Added:
    user: User
    membership: Membership
    invitation_token: str | None  # shown once; None when they can already sign in


def can_manage(role: str) -> bool:
    return role in MANAGERS


def _check_may_change(actor_role: str, target_role: str | None, new_role: str | None) -> None:
    if actor_role not in MANAGERS:
        raise Forbidden("Only owners and admins manage members.")
    if actor_role != Role.owner and Role.owner in (target_role, new_role):
        raise Forbidden("Only an owner can make, change or remove an owner.")


def _role(value: str) -> Role:
    if value not in Role.__members__:
        raise BadRequest(f"Unknown role '{value}'; choose one of: {', '.join(Role)}.")
    return Role(value)


async def organizations_of(session: AsyncSession, user_id: str) -> Sequence[Row[Organization, str]]:
    return await repository.organizations_of(session, user_id)


async def list_members(
    session: AsyncSession, organization_id: str
) -> Sequence[Row[User, Membership]]:
    return await repository.list_members(session, organization_id)


async def pending_invitations(session: AsyncSession, organization_id: str) -> dict[str, datetime]:
    return await repository.pending_invitations(session, organization_id, utcnow())


async def add(
    session: AsyncSession, organization_id: str, actor_role: str, email: str, role: str
) -> Added:
    new_role = _role(role)
    _check_may_change(actor_role, None, new_role)
    user = await user_repository.get_by_email(session, user_service.normalize_email(email))
    if user is None:
        user = await user_service.create_invited(session, email)
    elif await repository.get_member(session, organization_id, user.id) is not None:
        raise Conflict(f"{user.email} is already a member of this organization.")
    membership = Membership(organization_id=organization_id, user_id=user.id, role=new_role)
    session.add(membership)
    await session.flush()
    token = None
    if user.password_hash is None:
        token = await _invite(session, organization_id, user.id)
    return Added(user, membership, token)


async def reinvite(
    session: AsyncSession, organization_id: str, actor_role: str, user_id: str
) -> tuple[User, str]:
    """A fresh link for a member who has not chosen a password yet; older links stop working."""
    row = await repository.get_member(session, organization_id, user_id)
    if row is None:
        raise MemberNotFound()
    user, membership = row
    _check_may_change(actor_role, membership.role, None)
    if user.password_hash is not None:
        raise Conflict(f"{user.email} has already chosen a password and can sign in.")
    await repository.delete_invitations_of(session, user.id)
    return user, await _invite(session, organization_id, user.id)


async def _invite(session: AsyncSession, organization_id: str, user_id: str) -> str:
    token = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        Invitation(
            id=_invitation_id(token),
            organization_id=organization_id,
            user_id=user_id,
            created_at=now,
            expires_at=now + INVITATION_LIFETIME,
        )
    )
    await session.flush()
    return token


def _invitation_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def change_role(
    session: AsyncSession, organization_id: str, actor_role: str, user_id: str, role: str
) -> Membership:
    new_role = _role(role)
    # Owners first, always in this order: two owners demoting each other queue
    # here instead of deadlocking, and the second sees the first's change.
    owners = await repository.lock_owners(session, organization_id)
    row = await repository.get_member(session, organization_id, user_id, for_update=True)
    if row is None:
        raise MemberNotFound()
    membership = row[1]
    _check_may_change(actor_role, membership.role, new_role)
    if membership.role == Role.owner and new_role != Role.owner and owners <= 1:
        raise LastOwner()
    if membership.role != new_role:
        membership.role = new_role
        mark_keys_changed(session)
        await session.flush()
    return membership


async def remove(
    session: AsyncSession, organization_id: str, actor_user_id: str, actor_role: str, user_id: str
) -> User:
    """Remove a member (anyone may leave); their API keys stop working at once."""
    owners = await repository.lock_owners(session, organization_id)
    row = await repository.get_member(session, organization_id, user_id, for_update=True)
    if row is None:
        raise MemberNotFound()
    user, membership = row
    if user_id != actor_user_id:
        _check_may_change(actor_role, membership.role, None)
    if membership.role == Role.owner and owners <= 1:
        raise LastOwner()
    await repository.delete_membership(session, organization_id, user_id)
    mark_keys_changed(session)
    return user


async def invitation(session: AsyncSession, token: str) -> tuple[User, Organization]:
    row = await repository.get_invitation(session, _invitation_id(token), utcnow())
    if row is None or row[1].password_hash is not None:
        raise InvitationNotValid()
    return row[1], row[2]


async def accept(session: AsyncSession, token: str, password: str) -> tuple[User, Organization]:
    """Set the invited person's password; every link they were sent stops working."""
    user, organization = await invitation(session, token)
    user_service.set_password(user, password)
    await repository.delete_invitations_of(session, user.id)
    await session.flush()
    return user, organization
