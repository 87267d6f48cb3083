from datetime import date

from sqlalchemy import Date, ForeignKey, Integer, PrimaryKeyConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base


class SpamRefusal(Base):
    """Posts to a form's hosted page refused as spam, counted per UTC day and
    reason (spam/service.py's Reason): what lets a form's admins notice a
    false positive, since nothing of a refused post is kept."""

    __tablename__ = "spam_refusals"
    __table_args__ = (
        PrimaryKeyConstraint("organization_id", "form_id", "day", "reason"),
        {"sqlite_with_rowid": False},
    )

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    day: Mapped[date] = mapped_column(Date())
    reason: Mapped[str] = mapped_column(String(40))
    count: Mapped[int] = mapped_column(Integer)
