from datetime import datetime

from sqlalchemy import ForeignKey, Integer, PrimaryKeyConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.models.base import Base, UTCDateTime


class FunnelCount(Base):
    """How many respondents of a form's hosted page took each step of its
    funnel (a view, a start, a page reached, a completion, a time to
    complete), per version and per hour, per UTC day and in all: what a
    funnel adds up instead of reading rows (funnel.steps says which steps).
    Added to by upserts, never read back row by row."""

    __tablename__ = "funnel_counts"
    __table_args__ = (
        # A funnel reads one form's rows of one period, a range of starts;
        # as answer_counts, the count stays out of the key and a page keeps
        # room, so that adding to a count is a HOT update on PostgreSQL.
        PrimaryKeyConstraint(
            "organization_id", "form_id", "period", "start", "form_version", "step"
        ),
        {"sqlite_with_rowid": False, "postgresql_with": {"fillfactor": 70}},
    )

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    # "h": the hour from `start`; "d": the UTC day from `start`; "t": all time
    # (`start` is then the epoch).
    period: Mapped[str] = mapped_column(String(1))
    # The hour a respondent's first page was served (their stamp's), else
    # the hour the step was taken.
    start: Mapped[datetime] = mapped_column(UTCDateTime())
    form_version: Mapped[int] = mapped_column(Integer)
    # "view", "start", "done", "reach:3", "left:2", "time:37" (funnel.steps).
    step: Mapped[str] = mapped_column(String(16))
    count: Mapped[int] = mapped_column(Integer)
