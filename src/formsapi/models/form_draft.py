from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, JSONColumn, UTCDateTime


class FormDraft(Base):
    """One save of a form's draft in the builder: the form as the API takes
    it (title, blocks and the rest of its definition), before it is
    published as the form's next version. The newest revision is the draft.

    A save writes revision n + 1 of the n it was made on: two people saving
    on the same revision collide on the primary key, and the second is told
    what the first changed instead of overwriting it."""

    __tablename__ = "form_drafts"

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    revision: Mapped[int] = mapped_column(Integer, primary_key=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSONColumn)
    # The form's version the draft was begun from.
    base_version: Mapped[int] = mapped_column(Integer)
    saved_by: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    # What the save did, as the builder says it ("Added “Email”").
    summary: Mapped[str] = mapped_column(String(300))
    saved_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
