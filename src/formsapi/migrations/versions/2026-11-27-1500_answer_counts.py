"""Answer counts: what summaries add up instead of reading rows.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 15:00:00

The counts of the submissions already stored are made by `formsapi migrate`
once this revision is applied (cli: recount), as they need the forms' blocks.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "answer_counts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("period", sa.String(length=1), nullable=False),
        sa.Column("start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("form_version", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=140), nullable=False),
        sa.Column("value", sa.String(length=210), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_answer_counts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_answer_counts_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id",
            "form_id",
            "period",
            "start",
            "form_version",
            "key",
            "value",
            name=op.f("pk_answer_counts"),
        ),
        sqlite_with_rowid=False,
        postgresql_with={"fillfactor": 70},
    )


def downgrade() -> None:
    op.drop_table("answer_counts")
