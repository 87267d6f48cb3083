from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class UsedChallenge(Base):
    """A proof-of-work challenge already spent on a post, kept until it
    expires so its solution cannot be posted twice: where the used ids live
    when no Redis is configured (with Redis they live there, with an expiry).
    Belongs to no organization: the id is a random nonce's digest."""

    __tablename__ = "used_challenges"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
