from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, JSONColumn, UTCDateTime


class WebhookSubscription(Base):
    """What an endpoint was subscribed to, and from when until when: one row
    from its creation, and another each time its event types or forms
    change. Recovering sends only events that happened while it wanted them."""

    __tablename__ = "webhook_subscriptions"
    __table_args__ = (
        Index(
            "ix_webhook_subscriptions_organization_id_endpoint_id_started_at",
            "organization_id",
            "endpoint_id",
            "started_at",
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    # As on the endpoint: empty means every type (and every form).
    event_types: Mapped[list[str]] = mapped_column(JSONColumn)
    form_ids: Mapped[list[str]] = mapped_column(JSONColumn)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
