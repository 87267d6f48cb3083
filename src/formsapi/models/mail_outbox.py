from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, text
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class MailKind(StrEnum):
    submission = "submission"  # a member told of one submission
    copy = "copy"  # the respondent's copy of their answers
    digest = "digest"  # a member's daily digest of a form


class MailStatus(StrEnum):
    pending = "pending"
    sent = "sent"  # the SMTP server accepted it
    skipped = "skipped"  # nothing to send any more (deleted, left, refused address)
    failed = "failed"  # refused for good, or not accepted before giving up


class MailOutbox(Base):
    """One mail to send: written in the transaction that takes its
    submission's event off the event outbox (or, for a digest, once its day
    is over), claimed by a sender with a lease, marked sent only once the
    SMTP server accepted it. What it says is read when it is sent: a
    deleted submission's answers are never mailed. Its id is its mail's
    Message-ID, the same on every attempt."""

    __tablename__ = "mail_outbox"
    __table_args__ = (
        Index(
            "ix_mail_outbox_next_attempt_at",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
        # One digest per member, form and day, whichever sender writes it.
        Index(
            "uq_mail_outbox_digest",
            "form_id",
            "user_id",
            "day",
            unique=True,
            postgresql_where=text("kind = 'digest'"),
            sqlite_where=text("kind = 'digest'"),
        ),
        Index("ix_mail_outbox_created_at", "created_at"),  # the retention sweep
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(20))
    # No foreign key: a deleted submission's mail is skipped, not lost silently.
    submission_id: Mapped[str | None] = mapped_column(String(40))
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    day: Mapped[datetime | None] = mapped_column(UTCDateTime())  # a digest's UTC day
    # A copy's recipient as it was counted: the keyed hash of the address
    # (notification/service.py). Sent only to an address with that hash.
    recipient: Mapped[bytes | None] = mapped_column(LargeBinary(32))
    status: Mapped[str] = mapped_column(String(20), default=MailStatus.pending.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
