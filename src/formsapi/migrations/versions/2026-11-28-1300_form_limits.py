"""A form's schedule, limit and quotas: when it opens and closes, how many
submissions it takes, its messages before opening and after closing, and
the places per chosen option.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 13:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # All null for every existing form: no schedule, no limit, no quota.
    with op.batch_alter_table("forms") as batch:
        batch.add_column(sa.Column("opens_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("closes_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("max_submissions", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("message_before_opening", sa.String(length=1000), nullable=True))
        batch.add_column(sa.Column("message_after_closing", sa.String(length=1000), nullable=True))
        batch.add_column(
            sa.Column(
                "quotas",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )
        batch.create_index("ix_forms_opens_at", ["opens_at"], unique=False)
        batch.create_index("ix_forms_closes_at", ["closes_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("forms") as batch:
        batch.drop_index("ix_forms_closes_at")
        batch.drop_index("ix_forms_opens_at")
        for name in (
            "quotas",
            "message_after_closing",
            "message_before_opening",
            "max_submissions",
            "closes_at",
            "opens_at",
        ):
            batch.drop_column(name)
