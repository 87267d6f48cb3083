from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class AuditEntry(Base):
    """Who did something to respondents' data, what and when: an export or
    an erasure by person. Never what was searched for nor any answer, so the
    record of an erasure holds nothing of the person erased."""

    __tablename__ = "audit_entries"
    __table_args__ = (
        # The organization's entries, newest first.
        Index("ix_audit_entries_organization_id_created_at", "organization_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    # "member" (a person in the settings area) or "key" (an API key); the id
    # and name as they were, kept after the key or the person is gone.
    actor_kind: Mapped[str] = mapped_column(String(20))
    actor_id: Mapped[str] = mapped_column(String(40))
    actor_name: Mapped[str] = mapped_column(String(320))
    action: Mapped[str] = mapped_column(String(40))  # respondent.exported, respondent.erased
    # Submissions and partial responses exported or erased.
    count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
