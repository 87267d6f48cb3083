from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class StartedStamp(Base):
    """A page stamp (hosted/stamp.py) whose respondent's start the funnel
    counted, kept while a start can still be counted from it, so that one
    page served is one start however often its beacon or first post comes,
    in every process. Belongs to no organization: the id is the stamp's
    signature, an HMAC that names nothing."""

    __tablename__ = "started_stamps"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
