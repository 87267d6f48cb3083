from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, UTCDateTime


class Invitation(Base):
    """A link that lets an invited person choose their password. The link's token
    is shown once to whoever invited them; only its SHA-256 is stored."""

    __tablename__ = "invitations"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the token
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
