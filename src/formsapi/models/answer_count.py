from datetime import datetime

from sqlalchemy import ForeignKey, Integer, PrimaryKeyConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class AnswerCount(Base):
    """How many of a form's submissions hold each answer key (and, for the
    keys whose values are counted, each value), per version and per hour, per
    UTC day and in all: what an answer summary adds up instead of reading
    rows. Kept exact in the same transaction as every insert, edit and delete
    of a submission (summary.tally says what is counted)."""

    __tablename__ = "answer_counts"
    __table_args__ = (
        # A summary reads one form's rows of one period, a range of starts.
        # The count is left out of the key (no INCLUDE), and a page keeps room,
        # so that adding to a count is a HOT update on PostgreSQL, not a new
        # index entry: the rows a busy form's posts add to are the same ones,
        # batch after batch, under the form's lock (bench/RESULTS.md).
        PrimaryKeyConstraint(
            "organization_id", "form_id", "period", "start", "form_version", "key", "value"
        ),
        {"sqlite_with_rowid": False, "postgresql_with": {"fillfactor": 70}},
    )

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    # "h": the hour from `start`; "d": the UTC day from `start`; "t": all time
    # (`start` is then the epoch).
    period: Mapped[str] = mapped_column(String(1))
    start: Mapped[datetime] = mapped_column(UTCDateTime())
    form_version: Mapped[int] = mapped_column(Integer)
    # An answer key, or "#ending" (value: the ending's key as JSON, or null).
    key: Mapped[str] = mapped_column(String(140))
    # The value as JSON text; "" for a key whose values are not counted.
    value: Mapped[str] = mapped_column(String(210))
    count: Mapped[int] = mapped_column(Integer)
