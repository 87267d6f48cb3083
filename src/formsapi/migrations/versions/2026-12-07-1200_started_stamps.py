"""The page stamps whose funnel start was counted, kept a while so that a
stamp counts one start however often it is posted.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "started_stamps",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_started_stamps")),
    )
    op.create_index(
        op.f("ix_started_stamps_expires_at"), "started_stamps", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_started_stamps_expires_at"), table_name="started_stamps")
    op.drop_table("started_stamps")
