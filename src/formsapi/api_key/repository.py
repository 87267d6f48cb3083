from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Row, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.db.hot import HotStatement
from formsapi.db.session import ReadSession
from formsapi.models import APIKey, Membership, Organization, User
from formsapi.tenancy import same_organization, scoped, unscoped


class KeyForRequest(NamedTuple):
    """What a request needs of the key it is sent with."""

    id: str
    organization_id: str
    secret_hash: str
    revoked_at: datetime | None
    scopes: list[str]
    plan: str  # its organization's
    role: str  # its creator's in the organization


# Every API request whose key is not in the principal cache reads this: each
# one when there is no Redis to share the cache's epoch (the embedded default).
# The inner join on memberships is what disables the keys of a removed member.
_FOR_REQUEST = HotStatement(
    unscoped(
        select(
            APIKey.id,
            APIKey.organization_id,
            APIKey.secret_hash,
            APIKey.revoked_at,
            APIKey.scopes,
            Organization.plan,
            Membership.role,
        )
        .join(Organization, Organization.id == APIKey.organization_id)
        .join(
            Membership,
            same_organization(Membership, APIKey) & (Membership.user_id == APIKey.user_id),
        )
        .where(APIKey.secret_hash == bindparam("secret_hash")),
        "the key's hash is how the caller's organization is found",
    )
)


async def find_for_request(session: ReadSession, secret_hash: str) -> KeyForRequest | None:
    """The key, its organization's plan and its creator's role, in one indexed query."""
    rows = await _FOR_REQUEST.all(session, {"secret_hash": secret_hash})
    return KeyForRequest._make(rows[0]) if rows else None


async def touch(
    session: AsyncSession, organization_id: str, key_id: str, now: datetime, stale_before: datetime
) -> None:
    # Conditional, so a busy key writes at most once per interval.
    await session.execute(
        update(APIKey)
        .where(scoped(APIKey, organization_id), APIKey.id == key_id)
        .where(or_(APIKey.last_used_at.is_(None), APIKey.last_used_at < stale_before))
        .values(last_used_at=now)
    )


async def list_for_organization(session: AsyncSession, organization_id: str) -> list[APIKey]:
    statement = (
        select(APIKey)
        .where(scoped(APIKey, organization_id))
        .order_by(APIKey.created_at.desc(), APIKey.id.desc())
    )
    return list(await session.scalars(statement))


async def get(session: AsyncSession, key_id: str) -> APIKey | None:
    """A key by id alone: the operator's command line names no organization."""
    statement = unscoped(select(APIKey).where(APIKey.id == key_id), "the operator names a key")
    return await session.scalar(statement)


async def list_with_creators(
    session: AsyncSession, organization_id: str
) -> Sequence[Row[APIKey, str, str | None]]:
    """The organization's keys, newest first, with their creator's email and
    current role (None once the creator has left: the key no longer works)."""
    statement = (
        select(APIKey, User.email, Membership.role)
        .join(User, User.id == APIKey.user_id)
        .outerjoin(
            Membership,
            same_organization(Membership, APIKey) & (Membership.user_id == APIKey.user_id),
        )
        .where(scoped(APIKey, organization_id))
        .order_by(APIKey.created_at.desc(), APIKey.id.desc())
    )
    return (await session.execute(statement)).all()


async def get_in(session: AsyncSession, organization_id: str, key_id: str) -> APIKey | None:
    return await session.scalar(
        select(APIKey).where(scoped(APIKey, organization_id), APIKey.id == key_id)
    )


async def role_of(session: AsyncSession, organization_id: str, user_id: str) -> str | None:
    """The role of a key's creator in the key's organization, None if not a member.
    The membership row is share-locked until commit: a removal (which revokes
    the member's keys) waits for the key being made, or this for the removal."""
    return await session.scalar(
        select(Membership.role)
        .where(scoped(Membership, organization_id), Membership.user_id == user_id)
        .with_for_update(read=True)
    )


async def revoke_all_of(
    session: AsyncSession, organization_id: str, user_id: str, now: datetime
) -> None:
    await session.execute(
        update(APIKey)
        .where(
            scoped(APIKey, organization_id),
            APIKey.user_id == user_id,
            APIKey.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
