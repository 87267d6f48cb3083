"""Shared reports show released figures: what a link shows, and when it was
released (at most once a UTC day, once k more submissions came in).

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-08 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # None for every existing link: its next read releases its figures.
    with op.batch_alter_table("report_links") as batch:
        batch.add_column(sa.Column("released_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("release", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("report_links") as batch:
        batch.drop_column("release")
        batch.drop_column("released_at")
