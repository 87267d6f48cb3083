from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from formsapi.kit.time import utcnow
from formsapi.models.base import Base, JSONColumn, NullableJSONColumn, UTCDateTime


class FormStatus(StrEnum):
    draft = "draft"
    published = "published"
    closed = "closed"
    archived = "archived"


class Form(Base):
    __tablename__ = "forms"
    __table_args__ = (
        # Serves "forms of one org, newest first" without a sort.
        Index("ix_forms_organization_id_created_at_id", "organization_id", "created_at", "id"),
        UniqueConstraint("organization_id", "slug", name="uq_forms_organization_id_slug"),
        # The schedule's sweep finds the forms due to open or close without a scan.
        Index("ix_forms_opens_at", "opens_at"),
        Index("ix_forms_closes_at", "closes_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(20), default=FormStatus.draft.value)
    version: Mapped[int] = mapped_column(Integer, default=1)
    # Blocks as the API shows them (camelCase), validated on the way in.
    blocks: Mapped[list[dict[str, Any]]] = mapped_column(JSONColumn)
    # Hidden fields, variables, rules and endings (language/definition.py), as
    # the API shows them; None: none of them.
    definition: Mapped[dict[str, Any] | None] = mapped_column(JSONColumn, nullable=True)
    # Origins whose pages may show this form's hosted page in a frame, in place
    # of its organization's list; None: the organization's applies, []: no site
    # may. A delivery setting, not part of the form's versions or its JSON.
    embed_origins: Mapped[list[str] | None] = mapped_column(NullableJSONColumn, nullable=True)
    # Whether its hosted page asks the respondent's browser for a proof of work
    # (spam/challenge.py) before it takes a submission; a delivery setting too.
    challenge: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Submissions older than this many days are deleted by the retention sweep
    # (submission/retention.py); None: kept until deleted. A delivery setting too.
    retention_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Its schedule and limit (form/limits.py), delivery settings too: it opens
    # at opens_at (kept closed until then, the setting cleared once done),
    # takes no answer from closes_at on, and closes when response_count
    # reaches max_submissions; None: no such bound.
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    closes_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    max_submissions: Mapped[int | None] = mapped_column(Integer, nullable=True)
    message_before_opening: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    message_after_closing: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    # Places per chosen option ([{question, option, limit, action, message}],
    # as the API shows them); None: none. Counted from the answer counts.
    quotas: Mapped[list[dict[str, Any]] | None] = mapped_column(NullableJSONColumn, nullable=True)
    # One response per respondent (admission/), by "cookie", "email", "ip"
    # or "invitation"; None: as many as they like. Delivery settings too.
    one_response_by: Mapped[str | None] = mapped_column(String(20), nullable=True)
    # The email question whose answer may submit once ("email").
    one_response_question: Mapped[str | None] = mapped_column(String(100), nullable=True)
    # How long one address waits before it may submit again ("ip").
    one_response_hours: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The argon2 hash of the password (or PIN) its hosted page asks for
    # before the first page; None: none asked. Never shown.
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # Kept exact in the same transaction as every insert and delete of a submission,
    # so totals never cost a count over the form's rows.
    response_count: Mapped[int] = mapped_column(Integer, default=0)
    # The number of the form's latest submission change (create, edit, delete),
    # bumped in the statement that takes the form's row lock, so numbers follow
    # commit order: the change feed's cursor.
    change_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Tombstones up to this number have been purged: a feed cursor below it
    # may have missed a delete.
    tombstone_horizon: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
