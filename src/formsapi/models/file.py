from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class File(Base):
    """An uploaded file: what it is (name, type by content, size, hash) and
    where its bytes are (`storage`); the bytes themselves are in file_chunks
    or an object store, never here.

    A file belongs to a submission once one refers to it. Until then it
    expires (`expires_at`) and is purged with its bytes. The references to
    its organization, form and submission are cleared rather than cascaded
    when those go: bytes in an object store are not deleted by a database
    cascade, so the purge finds such rows (no submission, no expiry) and
    deletes both."""

    __tablename__ = "files"
    __table_args__ = (
        # A submission's files (deleted with it) and the purge (no submission).
        Index("ix_files_submission_id", "submission_id"),
        Index("ix_files_expires_at", "expires_at"),
        # A form's files, and the bytes its unclaimed uploads hold (those
        # taken have no expiry): read from those alone.
        Index("ix_files_form_id_expires_at", "form_id", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str | None] = mapped_column(
        ForeignKey("organizations.id", ondelete="SET NULL"), nullable=True
    )
    form_id: Mapped[str | None] = mapped_column(
        ForeignKey("forms.id", ondelete="SET NULL"), nullable=True
    )
    question: Mapped[str] = mapped_column(String(64))
    submission_id: Mapped[str | None] = mapped_column(
        ForeignKey("submissions.id", ondelete="SET NULL"), nullable=True
    )
    name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(255))
    # Bytes; while the upload is arriving, the most it may reach (what it
    # holds of its form's room for uploads no submission took).
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    sha256: Mapped[bytes | None] = mapped_column(LargeBinary(32), nullable=True)
    storage: Mapped[str] = mapped_column(String(16))  # "database" or "s3"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # None while the bytes are still arriving: not yet a file anyone can use.
    stored_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # When an upload no submission took is purged; None once one took it.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class FileChunk(Base):
    """The bytes of a file kept in the database, in order, a bounded piece
    per row: written and read a piece at a time, so a file's size never
    becomes a process's memory. Reached only by a file id found through a
    query scoped to its organization."""

    __tablename__ = "file_chunks"

    file_id: Mapped[str] = mapped_column(
        ForeignKey("files.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
