"""Form versions (backfilled with each form's current blocks) and idempotency keys.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 15:35:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "form_versions",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("blocks", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_form_versions_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_form_versions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "form_id", "version", name=op.f("pk_form_versions")
        ),
    )
    op.execute(
        "INSERT INTO form_versions (organization_id, form_id, version, title, blocks, "
        "created_at) SELECT organization_id, id, version, title, blocks, updated_at FROM forms"
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("location", sa.String(length=500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_idempotency_keys_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "key", name=op.f("pk_idempotency_keys")),
    )
    with op.batch_alter_table("idempotency_keys") as batch:
        batch.create_index("ix_idempotency_keys_created_at", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("form_versions")
