"""The SQL of respondents who may answer once: the keyed hashes of those
who have, and invitation links."""

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, and_, case, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.models import FormInvitation, RespondentMark
from formsapi.tenancy import scoped, unscoped


def _postgres(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "postgresql"


async def mark(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    kind: str,
    digests: Sequence[bytes],
    now: datetime,
    expires_at: datetime | None = None,
) -> set[bytes]:
    """Mark these respondents as having answered: the digests marked now,
    leaving out those already marked (a mark whose window has passed is
    taken over). One statement: two transactions marking one digest, one
    waits for the other's commit and finds it taken."""
    if not digests:
        return set()
    insert = postgresql.insert if _postgres(session) else sqlite.insert
    rows = [
        {
            "organization_id": organization_id,
            "form_id": form_id,
            "kind": kind,
            "digest": digest,
            "created_at": now,
            "expires_at": expires_at,
        }
        for digest in digests
    ]
    adding = insert(RespondentMark).values(rows)
    lapsed = and_(RespondentMark.expires_at.is_not(None), RespondentMark.expires_at <= now)
    statement = adding.on_conflict_do_update(
        index_elements=["form_id", "kind", "digest"],
        set_={"created_at": now, "expires_at": adding.excluded.expires_at},
        where=lapsed,
    ).returning(RespondentMark.digest)
    return set((await session.scalars(statement)).all())


async def marked(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    kind: str,
    digest: bytes,
    now: datetime,
) -> bool:
    """Whether this respondent has answered (within their window)."""
    statement = select(RespondentMark.digest).where(
        scoped(RespondentMark, organization_id),
        RespondentMark.form_id == form_id,
        RespondentMark.kind == kind,
        RespondentMark.digest == digest,
        or_(RespondentMark.expires_at.is_(None), RespondentMark.expires_at > now),
    )
    return (await session.scalar(statement)) is not None


async def unmark(
    session: AsyncSession, organization_id: str, form_id: str, kind: str, digest: bytes
) -> None:
    """Forget one mark (an address's post that was not taken after all)."""
    await session.execute(
        delete(RespondentMark).where(
            scoped(RespondentMark, organization_id),
            RespondentMark.form_id == form_id,
            RespondentMark.kind == kind,
            RespondentMark.digest == digest,
        )
    )


async def purge_lapsed(session: AsyncSession, before: datetime, batch: int) -> int:
    """Forget up to `batch` marks whose window ended before `before`
    (the sweeps, kit/sweeps.py)."""
    lapsed = (
        select(RespondentMark.form_id, RespondentMark.kind, RespondentMark.digest)
        .where(RespondentMark.expires_at < before)
        .limit(batch)
    )
    statement = unscoped(
        delete(RespondentMark).where(
            RespondentMark.expires_at < before,
            RespondentMark.digest.in_(select(lapsed.subquery().c.digest)),
        ),
        "the sweep forgets every organization's lapsed marks",
    )
    connection = await session.connection()
    return int((await connection.execute(statement)).rowcount)


async def add_invitations(session: AsyncSession, invitations: Sequence[FormInvitation]) -> None:
    session.add_all(invitations)
    await session.flush()


InvitationRow = Row[str, str | None, str | None, datetime, datetime | None, datetime | None]
_INVITATION = (
    FormInvitation.id,
    FormInvitation.email,
    FormInvitation.label,
    FormInvitation.created_at,
    FormInvitation.used_at,
    FormInvitation.revoked_at,
)


async def invitation(
    session: AsyncSession, organization_id: str, form_id: str, token_hash: bytes
) -> InvitationRow | None:
    statement = select(*_INVITATION).where(
        scoped(FormInvitation, organization_id),
        FormInvitation.form_id == form_id,
        FormInvitation.token_hash == token_hash,
    )
    found: InvitationRow | None = (await session.execute(statement)).first()
    return found


async def invitations(
    session: AsyncSession, organization_id: str, form_id: str, limit: int, offset: int
) -> tuple[list[InvitationRow], int]:
    """A page of a form's links, newest first, and how many it has."""
    mine = (scoped(FormInvitation, organization_id), FormInvitation.form_id == form_id)
    statement = (
        select(*_INVITATION)
        .where(*mine)
        .order_by(FormInvitation.created_at.desc(), FormInvitation.id.desc())
        .limit(limit)
        .offset(offset)
    )
    rows = list((await session.execute(statement)).all())
    total = await session.scalar(select(func.count()).select_from(FormInvitation).where(*mine))
    return rows, int(total or 0)


async def revoke(
    session: AsyncSession, organization_id: str, form_id: str, invitation_id: str, now: datetime
) -> bool:
    """Revoke a link (kept revoked if it was); False when there is none."""
    statement = (
        update(FormInvitation)
        .where(
            scoped(FormInvitation, organization_id),
            FormInvitation.form_id == form_id,
            FormInvitation.id == invitation_id,
        )
        .values(
            revoked_at=case(
                (FormInvitation.revoked_at.is_(None), now), else_=FormInvitation.revoked_at
            )
        )
        .execution_options(synchronize_session=False)
    )
    connection = await session.connection()
    return bool((await connection.execute(statement)).rowcount)


async def spend(
    session: AsyncSession,
    organization_id: str,
    form_id: str,
    spent: dict[bytes, str],
    now: datetime,
) -> set[bytes]:
    """Spend the links of these token hashes on the submissions they name:
    the hashes spent now. A link used, revoked or unknown is left out. One
    statement, under the form's lock: of two posts with one link, the
    second finds it used."""
    if not spent:
        return set()
    statement = (
        update(FormInvitation)
        .where(
            scoped(FormInvitation, organization_id),
            FormInvitation.form_id == form_id,
            FormInvitation.token_hash.in_(list(spent)),
            FormInvitation.used_at.is_(None),
            FormInvitation.revoked_at.is_(None),
        )
        .values(
            used_at=now,
            submission_id=case(spent, value=FormInvitation.token_hash),
        )
        .returning(FormInvitation.token_hash)
        .execution_options(synchronize_session=False)
    )
    return set((await session.scalars(statement)).all())
