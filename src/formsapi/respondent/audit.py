"""The audit log of what was done to respondents' data by person: who,
what, when and how many, written in the transaction that did it."""

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.kit.ids import new_id
from formsapi.kit.time import isoformat_z, utcnow
from formsapi.models import AuditEntry
from formsapi.respondent import audit_repository as repository

MAX_ENTRIES = 200


@dataclass(frozen=True, slots=True)
class Actor:
    kind: str  # "member" or "key"
    id: str
    name: str


async def record(
    session: AsyncSession, organization_id: str, actor: Actor, action: str, count: int
) -> None:
    await repository.add(
        session,
        AuditEntry(
            id=new_id("aud"),
            organization_id=organization_id,
            actor_kind=actor.kind,
            actor_id=actor.id,
            actor_name=actor.name[:320],
            action=action,
            count=count,
            created_at=utcnow(),
        ),
    )


async def recent(
    session: AsyncSession, organization_id: str, limit: int = MAX_ENTRIES
) -> list[dict[str, Any]]:
    """The organization's newest entries as the API shows them."""
    return [
        {
            "id": entry.id,
            "action": entry.action,
            "actor": {"kind": entry.actor_kind, "id": entry.actor_id, "name": entry.actor_name},
            "count": entry.count,
            "createdAt": isoformat_z(entry.created_at),
        }
        for entry in await repository.recent(session, organization_id, limit)
    ]
