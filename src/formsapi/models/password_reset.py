from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, UTCDateTime


class PasswordReset(Base):
    """A link, mailed to an account's address, that lets its holder choose a new
    password once. Only the SHA-256 of its token is stored."""

    __tablename__ = "password_resets"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the token
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
