"""A form's own list of the origins allowed to show its hosted page in a
frame; NULL: its organization's list applies.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable, without a default: every existing form keeps its organization's list.
    with op.batch_alter_table("forms") as batch:
        batch.add_column(
            sa.Column(
                "embed_origins",
                sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("forms") as batch:
        batch.drop_column("embed_origins")
