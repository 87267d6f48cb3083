"""The origins allowed to show an organization's hosted forms in a frame.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN on both engines: no table is rebuilt.
    op.add_column(
        "organizations",
        sa.Column(
            "embed_origins",
            sa.JSON().with_variant(JSONB(), "postgresql"),
            nullable=False,
            server_default="[]",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("organizations") as batch:
        batch.drop_column("embed_origins")
