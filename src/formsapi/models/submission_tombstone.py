from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class SubmissionTombstone(Base):
    """A deleted submission as the change feed reports it: its id and the
    number of the delete, never its answers. Purged after
    FORMSAPI_TOMBSTONE_DAYS, which raises the form's tombstone_horizon."""

    __tablename__ = "submission_tombstones"
    __table_args__ = (
        # The retention sweep, across organizations.
        Index("ix_submission_tombstones_deleted_at", "deleted_at"),
    )

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    change_seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    submission_id: Mapped[str] = mapped_column(String(40))
    deleted_at: Mapped[datetime] = mapped_column(UTCDateTime())
