from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, UTCDateTime


class WebSession(Base):
    """A signed-in browser. The cookie holds a random token; only its SHA-256 is
    stored, so a copy of this table signs nobody in. Deleting the row signs the
    browser out at once."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the token
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    # The active organization: everything the area shows and makes belongs to it.
    organization_id: Mapped[str | None] = mapped_column(
        ForeignKey("organizations.id", ondelete="SET NULL")
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    # A one-time message for the next page, encrypted with a key derived from the
    # cookie's token: it may carry a new secret, which must not rest in the clear.
    flash: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
