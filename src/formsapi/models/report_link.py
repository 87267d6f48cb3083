from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, JSONColumn, UTCDateTime


class ReportLink(Base):
    """A form's summary published read-only at an unguessable link: figures
    only, some questions left out, counts under `min_count` withheld. The
    link works until it expires or is revoked; deleting the form ends it."""

    __tablename__ = "report_links"
    __table_args__ = (
        # A form's links, newest first, and the cascade of a form's delete.
        Index("ix_report_links_form_id_created_at", "form_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    # SHA-256 of the link's secret: the link is shown once, never stored.
    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    created_by: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Keys of the questions the report leaves out.
    hidden_questions: Mapped[list[str]] = mapped_column(JSONColumn)
    # Counts under it (and figures from fewer answers) read "fewer than k".
    min_count: Mapped[int] = mapped_column(Integer)
    # The figures the report shows, as last released, and when (report.service:
    # at most once a UTC day, once k more submissions came in). JSON, not
    # JSONB: the figures' keys keep their order.
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    release: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
