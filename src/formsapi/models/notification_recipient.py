from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class Frequency(StrEnum):
    each = "each"  # a mail for each submission
    daily = "daily"  # one digest a day


class NotificationRecipient(Base):
    """A member who gets mail about a form's submissions, and how often.
    Whether they are still a member is checked when the mail is sent."""

    __tablename__ = "notification_recipients"

    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    frequency: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
