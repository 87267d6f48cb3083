"""Hourly submission counts per form, backfilled from existing rows.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 15:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "submission_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_submission_counts_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_submission_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id",
            "form_id",
            "hour",
            name=op.f("pk_submission_counts"),
            postgresql_include=["count"],
        ),
        sqlite_with_rowid=False,
    )
    if op.get_bind().dialect.name == "postgresql":
        hour = "date_trunc('hour', submitted_at, 'UTC')"  # UTC hours whatever the server's zone
    else:
        # Stored as 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC, as SQLAlchemy writes it.
        hour = "strftime('%Y-%m-%d %H:00:00.000000', submitted_at)"
    # Fixed SQL, no input: the only variable part is chosen by dialect above.
    backfill = (
        "INSERT INTO submission_counts (organization_id, form_id, hour, count) "  # noqa: S608
        f"SELECT organization_id, form_id, {hour}, count(*) FROM submissions "
        f"GROUP BY organization_id, form_id, {hour}"
    )
    op.execute(backfill)


def downgrade() -> None:
    op.drop_table("submission_counts")
