from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class RespondentCopy(Base):
    """A form whose respondents are mailed a copy of their answers, at the
    address they gave to its email question `question_key`."""

    __tablename__ = "respondent_copies"

    form_id: Mapped[str] = mapped_column(
        ForeignKey("forms.id", ondelete="CASCADE"), primary_key=True
    )
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    question_key: Mapped[str] = mapped_column(String(140))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
