"""Funnel counts: views, starts, pages reached and completions of hosted pages.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "funnel_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("period", sa.String(length=1), nullable=False),
        sa.Column("start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("form_version", sa.Integer(), nullable=False),
        sa.Column("step", sa.String(length=16), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_funnel_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_funnel_counts_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id",
            "form_id",
            "period",
            "start",
            "form_version",
            "step",
            name=op.f("pk_funnel_counts"),
        ),
        sqlite_with_rowid=False,
        postgresql_with={"fillfactor": 70},
    )


def downgrade() -> None:
    op.drop_table("funnel_counts")
