"""Form drafts: the builder's saves of a form before it is published.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "form_drafts",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column(
            "document", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column("saved_by", sa.String(length=40), nullable=True),
        sa.Column("summary", sa.String(length=300), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_form_drafts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"], ["forms.id"], name=op.f("fk_form_drafts_form_id_forms"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["saved_by"],
            ["users.id"],
            name=op.f("fk_form_drafts_saved_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "form_id", "revision", name=op.f("pk_form_drafts")
        ),
    )


def downgrade() -> None:
    op.drop_table("form_drafts")
