from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, JSONColumn, UTCDateTime


class FormVersion(Base):
    """The blocks a form had at each version, so every submission can be read
    against the questions it answered."""

    __tablename__ = "form_versions"

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    blocks: Mapped[list[dict[str, Any]]] = mapped_column(JSONColumn)
    definition: Mapped[dict[str, Any] | None] = mapped_column(JSONColumn, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
