from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class RespondentMark(Base):
    """A respondent who has answered a form that takes one response each
    (hosted/once.py): the keyed hash of their email answer, or of their IP
    address where no Redis keeps those, never the address itself."""

    __tablename__ = "respondent_marks"
    __table_args__ = (
        # The purge of addresses whose window has passed, across organizations.
        Index("ix_respondent_marks_expires_at", "expires_at"),
    )

    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(10), primary_key=True)  # "email" or "ip"
    # HMAC-SHA256 of the normalized address under a key derived from FORMSAPI_SECRET_KEY.
    digest: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # None: for as long as the form lives (an email); an IP's mark lapses.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
