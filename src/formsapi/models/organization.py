from datetime import datetime
from enum import StrEnum

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, JSONColumn, UTCDateTime


class Plan(StrEnum):
    standard = "standard"
    pro = "pro"


class Organization(Base):
    __tablename__ = "organizations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    plan: Mapped[str] = mapped_column(String(20), default=Plan.standard.value)
    # Origins whose pages may show this organization's hosted forms in a frame
    # (CSP frame-ancestors); none: no site may.
    embed_origins: Mapped[list[str]] = mapped_column(JSONColumn, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
