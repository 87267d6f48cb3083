"""One response per respondent, and a password before the first page: a
form's settings, the keyed hashes of the respondents who have answered
(email answers, and IP addresses where no Redis keeps them), and
single-use invitation links.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # None for every existing form: as many responses as before, no password.
    with op.batch_alter_table("forms") as batch:
        batch.add_column(sa.Column("one_response_by", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("one_response_question", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("one_response_hours", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("password_hash", sa.String(length=255), nullable=True))
    op.create_table(
        "respondent_marks",
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_respondent_marks_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_respondent_marks_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("form_id", "kind", "digest", name=op.f("pk_respondent_marks")),
    )
    op.create_index(
        "ix_respondent_marks_expires_at", "respondent_marks", ["expires_at"], unique=False
    )
    op.create_table(
        "form_invitations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("token_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("submission_id", sa.String(length=40), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_form_invitations_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_form_invitations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_form_invitations")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_form_invitations_token_hash")),
    )
    op.create_index(
        "ix_form_invitations_form_id_created_at_id",
        "form_invitations",
        ["form_id", "created_at", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_form_invitations_form_id_created_at_id", table_name="form_invitations")
    op.drop_table("form_invitations")
    op.drop_index("ix_respondent_marks_expires_at", table_name="respondent_marks")
    op.drop_table("respondent_marks")
    with op.batch_alter_table("forms") as batch:
        batch.drop_column("password_hash")
        batch.drop_column("one_response_hours")
        batch.drop_column("one_response_question")
        batch.drop_column("one_response_by")
