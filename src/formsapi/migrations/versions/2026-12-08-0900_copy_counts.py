"""Respondents' copies counted per recipient and per form each UTC day, and
the recipient a copy was counted for on its mail.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-08 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "copy_counts",
        sa.Column("scope", sa.String(length=10), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("day", sa.DateTime(timezone=True), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "key", "day", name=op.f("pk_copy_counts")),
    )
    # Copies queued before counting began carry no recipient: they are
    # skipped when sent, as copies whose address changed are.
    with op.batch_alter_table("mail_outbox") as batch:
        batch.add_column(sa.Column("recipient", sa.LargeBinary(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mail_outbox") as batch:
        batch.drop_column("recipient")
    op.drop_table("copy_counts")
