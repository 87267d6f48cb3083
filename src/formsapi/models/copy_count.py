from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class CopyCount(Base):
    """Respondents' copies mailed in one UTC day (notification/service.py),
    counted per recipient and per form, so that the day's caps hold exactly
    whichever process writes the mails. A recipient is known by a keyed hash
    of their address, never the address. Belongs to no organization: an
    address is counted across all of them. Purged once its day is over."""

    __tablename__ = "copy_counts"

    scope: Mapped[str] = mapped_column(String(10), primary_key=True)  # "address" or "form"
    # The address's HMAC-SHA256 in hex, or the form's id.
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
