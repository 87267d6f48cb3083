from sqlalchemy import BigInteger, Integer
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base


class EventPosition(Base):
    """Where the events log stands, one row: the last position purged by
    retention (an events cursor older than that answers 410)."""

    __tablename__ = "event_positions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always 1
    purged_xid: Mapped[int] = mapped_column(BigInteger, default=0)
    purged_seq: Mapped[int] = mapped_column(BigInteger, default=0)
