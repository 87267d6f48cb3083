from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, UTCDateTime


class Invitation(Base):
    """An organization's invitation of an email address to a role. Membership
    begins only when a signed-in holder of that address's account accepts it
    (or creates the account through it, when there is none). The link's token
    is shown once or mailed; only its SHA-256 is stored."""

    __tablename__ = "invitations"
    __table_args__ = (
        # One pending invitation per address and organization: a new one replaces it.
        UniqueConstraint("organization_id", "email", name="uq_invitations_organization_id_email"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))  # normalized, as users.email
    role: Mapped[str] = mapped_column(String(20))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 hex
    invited_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
