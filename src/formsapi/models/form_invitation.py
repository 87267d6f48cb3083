from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class FormInvitation(Base):
    """A single-use link to a form that takes answers by invitation only
    (hosted/once.py): answered once, its token spent in the submission's
    own transaction. The link is shown once, when made; only the SHA-256 of
    its token is stored."""

    __tablename__ = "form_invitations"
    __table_args__ = (
        # A form's links, newest first (the API's list), and the form's cascade.
        Index("ix_form_invitations_form_id_created_at_id", "form_id", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    # Put into the form's hidden fields `email` and `label` when it has them.
    email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The submission it made (no foreign key: a deleted submission leaves the link used).
    submission_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
