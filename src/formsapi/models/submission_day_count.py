from datetime import datetime

from sqlalchemy import ForeignKey, Integer, PrimaryKeyConstraint
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class SubmissionDayCount(Base):
    """Submissions of one form per UTC day: the hourly counts summed by day,
    kept exact in the same transaction. A `since` two months back sums about
    60 of these and at most 23 hours, where the hours alone were some 1,500."""

    __tablename__ = "submission_day_counts"
    __table_args__ = (
        # As for the hourly counts: the sum is a walk over one index.
        PrimaryKeyConstraint("organization_id", "form_id", "day", postgresql_include=["count"]),
        {"sqlite_with_rowid": False},
    )

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    day: Mapped[datetime] = mapped_column(UTCDateTime())
    count: Mapped[int] = mapped_column(Integer)
