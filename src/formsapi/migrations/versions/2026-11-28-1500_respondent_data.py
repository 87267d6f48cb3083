"""Respondents' data: a form's retention (submissions older than so many
days deleted by a sweep) and the audit entries of exports and erasures by
person.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # None for every existing form: kept until deleted, as before.
    with op.batch_alter_table("forms") as batch:
        batch.add_column(sa.Column("retention_days", sa.Integer(), nullable=True))
    op.create_table(
        "audit_entries",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("actor_kind", sa.String(length=20), nullable=False),
        sa.Column("actor_id", sa.String(length=40), nullable=False),
        sa.Column("actor_name", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_audit_entries_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_entries")),
    )
    op.create_index(
        op.f("ix_audit_entries_organization_id_created_at"),
        "audit_entries",
        ["organization_id", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_entries_organization_id_created_at"), table_name="audit_entries")
    op.drop_table("audit_entries")
    with op.batch_alter_table("forms") as batch:
        batch.drop_column("retention_days")
