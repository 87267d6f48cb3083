from datetime import datetime

from sqlalchemy import ForeignKey, Integer, PrimaryKeyConstraint
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class SubmissionCount(Base):
    """Submissions of one form per hour, kept exact in the same transaction as
    every insert and delete. Totals after a `since` and the start of a deep
    page are found by summing these instead of counting rows."""

    __tablename__ = "submission_counts"
    __table_args__ = (
        # A seek reads thousands of (hour, count) pairs in key order: carrying the
        # count in the key (PostgreSQL) or clustering rows by it (SQLite) keeps
        # that a walk over one index, with no table lookups.
        PrimaryKeyConstraint("organization_id", "form_id", "hour", postgresql_include=["count"]),
        {"sqlite_with_rowid": False},
    )

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    hour: Mapped[datetime] = mapped_column(UTCDateTime())
    count: Mapped[int] = mapped_column(Integer)
