from datetime import datetime
from enum import StrEnum

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class EventType(StrEnum):
    submission_created = "submission.created"
    submission_updated = "submission.updated"
    submission_deleted = "submission.deleted"
    form_created = "form.created"
    form_updated = "form.updated"
    form_status_changed = "form.status_changed"
    form_deleted = "form.deleted"
    webhook_endpoint_disabled = "webhook_endpoint.disabled"
    ping = "ping"


class Event(Base):
    """A change, written in the transaction that made it: the events list
    and the webhooks' outbox.

    Its position is (xid, seq). On PostgreSQL xid is the writing
    transaction's id, and readers stop below the oldest transaction still
    running, so no event can appear behind a position a reader has passed
    (transactions commit in another order than they number their rows). On
    SQLite, whose writers take turns, xid is 0 and seq alone is commit
    order."""

    __tablename__ = "events"
    __table_args__ = (
        # An organization's events in order (GET /v1/events).
        Index("ix_events_organization_id_xid_seq", "organization_id", "xid", "seq"),
        Index("ix_events_occurred_at", "occurred_at"),  # the retention sweep
        # A form's events, or one resource's, to erase their answers.
        Index(
            "ix_events_organization_id_form_id_subject_id",
            "organization_id",
            "form_id",
            "subject_id",
        ),
        {"sqlite_autoincrement": True},  # a purged last row's number is never reused
    )

    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    xid: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    id: Mapped[str] = mapped_column(String(40), unique=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(40))
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The form it concerns, kept after the form is deleted (no foreign key).
    form_id: Mapped[str | None] = mapped_column(String(40))
    # The id of the resource its data is (a submission, a form, an endpoint).
    subject_id: Mapped[str | None] = mapped_column(String(40))
    # The event's `data`, as JSON text: stored, listed and sent as is.
    data: Mapped[str] = mapped_column(Text)
