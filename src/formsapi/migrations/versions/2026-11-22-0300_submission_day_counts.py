"""Daily submission counts per form, backfilled from the hourly counts.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 03:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "submission_day_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.DateTime(timezone=True), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_submission_day_counts_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_submission_day_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id",
            "form_id",
            "day",
            name=op.f("pk_submission_day_counts"),
            postgresql_include=["count"],
        ),
        sqlite_with_rowid=False,
    )
    if op.get_bind().dialect.name == "postgresql":
        day = "date_trunc('day', hour, 'UTC')"  # UTC days whatever the server's zone
    else:
        # Stored as 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC, as SQLAlchemy writes it.
        day = "strftime('%Y-%m-%d 00:00:00.000000', hour)"
    # Fixed SQL, no input: the only variable part is chosen by dialect above.
    backfill = (
        "INSERT INTO submission_day_counts (organization_id, form_id, day, count) "  # noqa: S608
        f"SELECT organization_id, form_id, {day}, sum(count) FROM submission_counts "
        f"GROUP BY organization_id, form_id, {day}"
    )
    op.execute(backfill)


def downgrade() -> None:
    op.drop_table("submission_day_counts")
