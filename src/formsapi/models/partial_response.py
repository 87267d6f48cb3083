from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, JSONColumn, UTCDateTime


class PartialResponse(Base):
    """A respondent's answers to a form with pages, kept while they are on
    their way: for resuming through a link, and for seeing where people stop.
    Never a submission: not listed, counted, numbered, nor sent as an event
    until completed, which makes an ordinary submission and erases the
    answers kept here (the row stays, marked, so its link says it was used)."""

    __tablename__ = "partial_responses"
    __table_args__ = (
        # A form's partials, most recently updated first (the API's list),
        # and the cascade of a form's delete.
        Index("ix_partial_responses_form_id_updated_at", "form_id", "updated_at"),
        # The purge, across organizations.
        Index("ix_partial_responses_expires_at", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    # SHA-256 of the resume link's secret: the link is shown once, never stored.
    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    # The answers so far, as the hosted page posted them; None once completed.
    answers: Mapped[dict[str, Any] | None] = mapped_column(JSONColumn, nullable=True)
    page: Mapped[int] = mapped_column(Integer, default=0)  # where a link opens the form
    reached: Mapped[int] = mapped_column(Integer, default=0)  # the furthest page seen
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
