from datetime import datetime
from enum import StrEnum

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class DeliveryStatus(StrEnum):
    pending = "pending"
    succeeded = "succeeded"
    failed = "failed"


class WebhookDelivery(Base):
    """One event to one endpoint: the outbox row a worker claims, and its
    outcome. A worker holds it while `lease_until` is ahead; one killed
    mid-send leaves it to the next claim once that passes."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        # What is due, across organizations: only pending rows are indexed.
        Index(
            "ix_webhook_deliveries_next_attempt_at",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
        # What is due for each endpoint (PostgreSQL's claims read a few per endpoint).
        Index(
            "ix_webhook_deliveries_endpoint_id_next_attempt_at",
            "endpoint_id",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
        # An endpoint's log, newest first.
        Index(
            "ix_webhook_deliveries_organization_id_endpoint_id_created_at",
            "organization_id",
            "endpoint_id",
            "created_at",
        ),
        Index("ix_webhook_deliveries_created_at", "created_at"),  # the retention sweep
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    event_seq: Mapped[int] = mapped_column(BigInteger)  # events.seq; the event may be purged first
    event_id: Mapped[str] = mapped_column(String(40))
    event_type: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default=DeliveryStatus.pending.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The last attempt, for the log at a glance.
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
