"""API keys: generated with a secret shown once, stored as a hash, checked per request."""

import hmac
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from formsapi.api_key import repository
from formsapi.api_key.cache import PrincipalCache
from formsapi.api_key.epoch import mark_keys_changed
from formsapi.api_key.last_use import LastUse
from formsapi.api_key.principal import Principal
from formsapi.api_key.scopes import READ_SCOPES, ROLE_SCOPES, Scope, effective_scopes
from formsapi.db.session import ReadSession
from formsapi.errors import BadRequest, Forbidden, NotFound, Unauthorized
from formsapi.kit import crypto
from formsapi.kit.ids import new_id
from formsapi.kit.time import utcnow
from formsapi.models import APIKey, Organization, Plan, Role, User


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: APIKey
    secret: str  # shown once, never stored


async def create(
    session: AsyncSession,
    organization: Organization,
    user: User,
    name: str,
    scopes: list[str] | None = None,
) -> CreatedKey:
    name = name.strip()
    if not name or len(name) > 100:
        raise BadRequest("A key needs a name of 1 to 100 characters.")
    wanted = sorted(set(scopes) if scopes else READ_SCOPES)
    unknown = [scope for scope in wanted if scope not in set(Scope)]
    if unknown:
        raise BadRequest(f"Unknown scope {', '.join(unknown)}; choose from: {', '.join(Scope)}.")
    role = await repository.role_of(session, organization.id, user.id)
    if role is None:
        raise Forbidden(f"{user.email} is not a member of organization {organization.id}.")
    beyond_role = [scope for scope in wanted if scope not in ROLE_SCOPES[role]]
    if beyond_role:
        raise Forbidden(f"A {role} cannot grant {', '.join(beyond_role)}.")

    secret = crypto.generate_secret()
    key = APIKey(
        id=new_id("key"),
        organization_id=organization.id,
        user_id=user.id,
        name=name,
        prefix=crypto.display_prefix(secret),
        secret_hash=crypto.hash_secret(secret),
        scopes=wanted,
    )
    session.add(key)
    await session.flush()
    return CreatedKey(key=key, secret=secret)


async def name_of(session: AsyncSession, organization_id: str, key_id: str) -> str:
    """The key's name (its id if it is gone), for a record of what it did."""
    key = await repository.get_in(session, organization_id, key_id)
    return key_id if key is None else key.name


async def list_for_organization(session: AsyncSession, organization_id: str) -> list[APIKey]:
    return await repository.list_for_organization(session, organization_id)


@dataclass(frozen=True, slots=True)
class KeyListing:
    key: APIKey
    creator_email: str
    effective_scopes: frozenset[str]  # what it may do now: its scopes within its creator's role
    status: str  # active or revoked (by hand, or when its creator left the organization)


async def list_with_status(session: AsyncSession, organization_id: str) -> list[KeyListing]:
    listings = []
    for key, email, role in await repository.list_with_creators(session, organization_id):
        active = key.revoked_at is None and role is not None
        effective = effective_scopes(key.scopes, role) if active and role else frozenset[str]()
        listings.append(KeyListing(key, email, effective, "active" if active else "revoked"))
    return listings


def may_revoke(key: APIKey, actor_user_id: str, actor_role: str) -> bool:
    """Owners and admins revoke any key of the organization; others their own."""
    return key.user_id == actor_user_id or actor_role in (Role.owner, Role.admin)


async def revoke_in(
    session: AsyncSession, organization_id: str, key_id: str, actor_user_id: str, actor_role: str
) -> APIKey:
    key = await repository.get_in(session, organization_id, key_id)
    if key is None:
        raise NotFound("No such API key in this organization.")
    if not may_revoke(key, actor_user_id, actor_role):
        raise Forbidden("Only owners, admins and the key's creator can revoke it.")
    return await _revoke(session, key)


async def revoke(session: AsyncSession, key_id: str) -> APIKey:
    """Revoke by id alone: the CLI's, run by whoever runs the server."""
    key = await repository.get(session, key_id)
    if key is None:
        raise NotFound(f"No API key with id '{key_id}'.")
    return await _revoke(session, key)


async def _revoke(session: AsyncSession, key: APIKey) -> APIKey:
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.flush()
        mark_keys_changed(session)
    return key


def secret_hash_of(header: str | None) -> str:
    """The hash of the key in `Authorization: Bearer <secret>`, or 401 saying
    what is wrong with the header."""
    if not header:
        raise Unauthorized("Send your API key as 'Authorization: Bearer <API_KEY>'.")
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        raise Unauthorized("The Authorization header must be 'Bearer <API_KEY>'.")
    if not crypto.is_well_formed(secret):
        raise Unauthorized("The API key is malformed.")
    return crypto.hash_secret(secret)


async def authenticate(
    sessionmaker: async_sessionmaker[ReadSession],
    secret_hash: str,
    cache: PrincipalCache,
    last_use: LastUse,
    epoch: bytes | str | None = None,
) -> Principal:
    """The caller behind a key, from the cache when the auth epoch allows.

    A session is opened only on a miss. The key's last use is recorded off
    the request's path (`last_use`), at most once an interval.
    `epoch`, when the caller has just read it from Redis, saves reading it here."""
    if epoch is None:
        epoch = await cache.current_epoch()
    principal = cache.get(secret_hash, epoch)
    if principal is None:
        async with sessionmaker() as session:
            principal = await _load(session, secret_hash)
        cache.put(secret_hash, principal, epoch)
    last_use.used(principal.organization_id, principal.key_id)
    return principal


async def _load(session: ReadSession, secret_hash: str) -> Principal:
    key = await repository.find_for_request(session, secret_hash)
    # Unknown keys and keys of removed members read alike: nothing to learn by probing.
    if key is None:
        raise Unauthorized("The API key is not valid.")
    if not hmac.compare_digest(key.secret_hash, secret_hash):
        raise Unauthorized("The API key is not valid.")
    if key.revoked_at is not None:
        # Only the holder of the secret can learn this, and it tells them what to do.
        raise Unauthorized("This API key has been revoked.")
    return Principal(
        key_id=key.id,
        organization_id=key.organization_id,
        plan=key.plan if key.plan in Plan.__members__ else Plan.standard,
        scopes=effective_scopes(key.scopes, key.role),
    )


def require_scope(principal: Principal, scope: Scope) -> None:
    if scope not in principal.scopes:
        raise Forbidden(f"This API key lacks the '{scope}' scope.", requiredScope=str(scope))
