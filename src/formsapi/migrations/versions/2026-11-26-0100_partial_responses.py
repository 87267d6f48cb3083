"""Partial responses: a respondent's answers on their way through a form
with pages, for resuming through a link and for seeing where people stop.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "partial_responses",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column(
            "answers", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True
        ),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("reached", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_partial_responses_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_partial_responses_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partial_responses")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_partial_responses_token_hash")),
    )
    op.create_index(
        "ix_partial_responses_form_id_updated_at", "partial_responses", ["form_id", "updated_at"]
    )
    op.create_index("ix_partial_responses_expires_at", "partial_responses", ["expires_at"])


def downgrade() -> None:
    op.drop_table("partial_responses")
