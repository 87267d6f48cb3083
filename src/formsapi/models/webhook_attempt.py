from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class WebhookAttempt(Base):
    """One try at a delivery, as the endpoint's log shows it."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (
        Index(
            "ix_webhook_attempts_organization_id_delivery_id",
            "organization_id",
            "delivery_id",
        ),
        Index("ix_webhook_attempts_attempted_at", "attempted_at"),  # the retention sweep
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    delivery_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime())
    duration_ms: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    # The first bytes of the receiver's answer, or what went wrong before one.
    response_body: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(String(500))
