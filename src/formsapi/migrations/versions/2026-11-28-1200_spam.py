"""Spam kept out of hosted pages: a form's proof-of-work challenge setting,
the counts of posts refused as spam per form, day and reason, and the
challenges already spent (where no Redis keeps them).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Off for every existing form: their pages work as before, without script.
    with op.batch_alter_table("forms") as batch:
        batch.add_column(
            sa.Column("challenge", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_table(
        "spam_refusals",
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("reason", sa.String(length=40), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_spam_refusals_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_spam_refusals_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "form_id", "day", "reason", name=op.f("pk_spam_refusals")
        ),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "used_challenges",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_used_challenges")),
    )
    op.create_index(
        op.f("ix_used_challenges_expires_at"), "used_challenges", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_used_challenges_expires_at"), table_name="used_challenges")
    op.drop_table("used_challenges")
    op.drop_table("spam_refusals")
    with op.batch_alter_table("forms") as batch:
        batch.drop_column("challenge")
