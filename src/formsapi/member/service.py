"""Membership: who belongs to an organization and with which role. The one
owner of memberships; the settings area and the command line call it.

An organization invites an email address to a role. Membership begins only
when that invitation is accepted, by someone signed in to the account with
that address, or by someone creating the account through it when none exists
yet. An invitation never sets or changes the password of an existing account,
and nothing an organization's admins do touches a credential of an account:
so adding someone to one organization cannot open the door to another.

Owners and admins manage members; only an owner invites, makes, changes or
removes an owner, and an organization always keeps at least one. A role
change moves the auth epoch, so what the member's API keys may do follows at
once; a removal revokes their keys for good.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key import repository as api_key_repository
from formsapi.api_key.epoch import mark_keys_changed
from formsapi.api_key.scopes import ROLE_SCOPES, Scope
from formsapi.errors import BadRequest, Conflict, Forbidden, NotFound
from formsapi.kit.crypto import hash_secret, new_link_token
from formsapi.kit.ids import new_id
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


class InvitationNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("No such invitation in this organization.")


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


class AccountExists(Conflict):
    def __init__(self, email: str) -> None:
        super().__init__(
            f"An account for {email} exists already: sign in to it to accept the invitation."
        )


class WrongAccount(Forbidden):
    def __init__(self, email: str) -> None:
        super().__init__(
            f"This invitation is for {email}. Sign out, then sign in as {email} to accept it."
        )


@dataclass(frozen=True, slots=True)
class IssuedInvitation:
    invitation: Invitation
    token: str  # the link's secret: shown once or mailed, never stored


@dataclass(frozen=True, slots=True)
class OpenInvitation:
    """What a link's holder sees: whose invitation, and whether its address
    has an account to sign in to (else the link may create it)."""

    invitation: Invitation
    organization: Organization
    has_account: bool


# What each role may do in the settings area, asked by its pages (and their
# templates) instead of comparing role names there. The API's own rules are
# scopes (formsapi.api_key.scopes); these follow them where the two meet.


def can_manage_members(role: str) -> bool:
    """Owners and admins invite, change and remove members."""
    return role in MANAGERS


def can_handle_owners(role: str) -> bool:
    """Only an owner makes, changes or removes an owner, or an owner's invitation."""
    return role == Role.owner


def can_change_member(actor_role: str, member_role: str) -> bool:
    """Whether someone with `actor_role` may change the role of (or remove,
    renew or withdraw the invitation of) someone with `member_role`."""
    return can_manage_members(actor_role) and (
        member_role != Role.owner or can_handle_owners(actor_role)
    )


def can_manage_keys(role: str) -> bool:
    """Owners and admins revoke any key of the organization; others only their own."""
    return role in MANAGERS


def can_manage_webhooks(role: str) -> bool:
    """The API's rule: the roles whose keys may hold webhooks:manage (owners
    and admins). An endpoint sends the organization's data elsewhere."""
    return Scope.webhooks_manage in ROLE_SCOPES.get(role, frozenset())


def can_edit_forms(role: str) -> bool:
    """The API's rule: the roles whose keys may hold forms:write (editors,
    admins and owners) make, change, duplicate and publish forms."""
    return Scope.forms_write in ROLE_SCOPES.get(role, frozenset())


def can_share_reports(role: str) -> bool:
    """Owners and admins publish a form's summary at a link anyone holding it
    may read, and revoke such links."""
    return role in MANAGERS


def can_manage_organization(role: str) -> bool:
    """Owners and admins change the organization's settings (the sites that
    may frame its forms)."""
    return role in MANAGERS


def _check_may_change(actor_role: str, target_role: str | None, new_role: str | None) -> None:
    if not can_manage_members(actor_role):
        raise Forbidden("Only owners and admins manage members.")
    if not can_handle_owners(actor_role) and Role.owner in (target_role, new_role):
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


async def pending_invitations(session: AsyncSession, organization_id: str) -> Sequence[Invitation]:
    """Invitations not accepted yet, expired ones included (an admin renews them)."""
    return await repository.pending_invitations(session, organization_id)


def expired(invitation: Invitation) -> bool:
    return invitation.expires_at <= utcnow()


async def invite(
    session: AsyncSession,
    organization_id: str,
    actor_user_id: str,
    actor_role: str,
    email: str,
    role: str,
) -> IssuedInvitation:
    """Invite `email` to `role`, replacing any invitation the address had here.
    Answers the same whether or not the address has an account anywhere."""
    new_role = _role(role)
    _check_may_change(actor_role, None, new_role)
    email = user_service.normalize_email(email)
    if await repository.is_member_by_email(session, organization_id, email):
        raise Conflict(f"{email} is already a member of this organization.")
    pending = await repository.get_invitation_by_email(session, organization_id, email)
    if pending is not None:
        _check_may_change(actor_role, pending.role, None)  # an admin cannot replace an owner's
    return await _issue(session, organization_id, email, new_role, actor_user_id)


async def _issue(
    session: AsyncSession, organization_id: str, email: str, role: str, invited_by: str | None
) -> IssuedInvitation:
    """A new invitation of `email`, replacing any other it had here."""
    token, token_hash = new_link_token()
    now = utcnow()
    invitation = Invitation(
        id=new_id("inv"),
        organization_id=organization_id,
        email=email,
        role=role,
        token_hash=token_hash,
        invited_by=invited_by,
        created_at=now,
        expires_at=now + INVITATION_LIFETIME,
    )
    try:
        async with session.begin_nested():
            await repository.delete_invitation(session, organization_id, email)
            session.add(invitation)
    except IntegrityError:
        # Another request invited the address at the same moment (a double click).
        raise Conflict(
            f"{email} was invited by another request just now; see the pending invitations."
        ) from None
    return IssuedInvitation(invitation, token)


async def renew(
    session: AsyncSession,
    organization_id: str,
    actor_user_id: str,
    actor_role: str,
    invitation_id: str,
) -> IssuedInvitation:
    """A fresh link for a pending invitation; the old link stops working."""
    invitation = await repository.get_invitation_in(session, organization_id, invitation_id)
    if invitation is None:
        raise InvitationNotFound()
    _check_may_change(actor_role, invitation.role, None)
    return await _issue(session, organization_id, invitation.email, invitation.role, actor_user_id)


async def cancel(
    session: AsyncSession, organization_id: str, actor_role: str, invitation_id: str
) -> Invitation:
    invitation = await repository.get_invitation_in(session, organization_id, invitation_id)
    if invitation is None:
        raise InvitationNotFound()
    _check_may_change(actor_role, invitation.role, None)
    await repository.delete_invitation(session, organization_id, invitation.email)
    return invitation


async def open_invitation(session: AsyncSession, token: str) -> OpenInvitation:
    found = await repository.find_invitation(session, hash_secret(token), utcnow())
    if found is None:
        raise InvitationNotValid()
    invitation, organization = found
    account = await user_repository.get_by_email(session, invitation.email)
    return OpenInvitation(
        invitation, organization, account is not None and account.password_hash is not None
    )


async def accept(session: AsyncSession, token: str, user: User) -> OpenInvitation:
    """Join as the signed-in `user`, who must hold the invited address."""
    found = await repository.find_invitation(session, hash_secret(token), utcnow(), for_update=True)
    if found is None:
        raise InvitationNotValid()
    invitation, organization = found
    if user.email != invitation.email:
        raise WrongAccount(invitation.email)
    await _join(session, invitation, user)
    return OpenInvitation(invitation, organization, True)


async def join_with_new_account(
    session: AsyncSession, token: str, password_hash: str
) -> tuple[User, OpenInvitation]:
    """Create the invited address's account with a password already hashed
    (off the event loop, before this transaction), and join. Refused when the
    address has an account: the link never sets an existing one's password."""
    found = await repository.find_invitation(session, hash_secret(token), utcnow(), for_update=True)
    if found is None:
        raise InvitationNotValid()
    invitation, organization = found
    user = await user_repository.get_by_email(session, invitation.email)
    if user is not None and user.password_hash is not None:
        raise AccountExists(invitation.email)
    try:
        async with session.begin_nested():
            if user is None:
                user = await user_service.create_with_hash(session, invitation.email, password_hash)
            elif not await user_service.set_first_password(session, user.id, password_hash):
                # A row from before invitations named addresses, never signed in to,
                # whose password another link set a moment ago.
                raise AccountExists(invitation.email)
    except IntegrityError:
        raise AccountExists(invitation.email) from None  # created meanwhile
    await _join(session, invitation, user)
    return user, OpenInvitation(invitation, organization, True)


async def _join(session: AsyncSession, invitation: Invitation, user: User) -> None:
    organization_id = invitation.organization_id
    if await repository.get_member(session, organization_id, user.id) is None:
        session.add(
            Membership(organization_id=organization_id, user_id=user.id, role=invitation.role)
        )
    await repository.delete_invitation(session, organization_id, invitation.email)
    await session.flush()


async def add_directly(
    session: AsyncSession, organization_id: str, user: User, role: str
) -> Membership:
    """Make an existing account a member with `role`, or change their role: the
    command line's, run by whoever runs the service. People in the settings
    area invite instead."""
    new_role = _role(role)
    owners = await repository.lock_owners(session, organization_id)
    row = await repository.get_member(session, organization_id, user.id, for_update=True)
    if row is None:
        membership = Membership(organization_id=organization_id, user_id=user.id, role=new_role)
        session.add(membership)
        await repository.delete_invitation(session, organization_id, user.email)
    else:
        membership = row[1]
        await _set_role(session, membership, new_role, owners)
    await session.flush()
    return membership


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
    await _set_role(session, membership, new_role, owners)
    await session.flush()
    return membership


async def _set_role(session: AsyncSession, membership: Membership, role: Role, owners: int) -> None:
    if membership.role == Role.owner and role != Role.owner and owners <= 1:
        raise LastOwner()
    if membership.role != role:
        membership.role = role
        mark_keys_changed(session)  # what the member's keys may do follows at once


async def remove(
    session: AsyncSession, organization_id: str, actor_user_id: str, actor_role: str, user_id: str
) -> User:
    """Remove a member (anyone may leave). Their API keys of this organization
    are revoked for good: joining again later does not bring them back."""
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
    await api_key_repository.revoke_all_of(session, organization_id, user_id, utcnow())
    mark_keys_changed(session)
    return user


def may_grant(actor_role: str) -> list[Role]:
    """The roles this person may hand out: only an owner makes owners."""
    return [role for role in Role if role != Role.owner or can_handle_owners(actor_role)]
