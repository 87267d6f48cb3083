from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, JSONColumn, UTCDateTime


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        # Serves "submissions of one form, newest first" and `since` as a range scan.
        Index(
            "ix_submissions_organization_id_form_id_submitted_at_id",
            "organization_id",
            "form_id",
            "submitted_at",
            "id",
        ),
        # The change feed: a form's changes in commit order, one per number.
        # Without organization_id, which a form id implies: every post writes
        # this entry under its form's lock, and the wider one cost posts.
        Index("ix_submissions_form_id_change_seq", "form_id", "change_seq", unique=True),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    form_version: Mapped[int] = mapped_column(Integer, default=1)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    answers: Mapped[dict[str, Any]] = mapped_column(JSONColumn)
    # The form's change_seq of this submission's latest change (Form.change_seq).
    change_seq: Mapped[int] = mapped_column(BigInteger)
    # 1 when submitted, +1 per edit: the ETag.
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # The last edit's time; NULL until the first (the API shows submitted_at).
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The key of the ending the respondent reached; None when the form has none.
    ending: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The language the respondent answered in (one of the form's); None for
    # submissions made before forms had languages.
    language: Mapped[str | None] = mapped_column(String(35), nullable=True)
