"""Mail notifications: who is told of a form's submissions, the respondent's
copy, and the mail outbox.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _organization(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id"],
        ["organizations.id"],
        name=op.f(f"fk_{table}_organization_id_organizations"),
        ondelete="CASCADE",
    )


def _form(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["form_id"], ["forms.id"], name=op.f(f"fk_{table}_form_id_forms"), ondelete="CASCADE"
    )


def _user(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=op.f(f"fk_{table}_user_id_users"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "notification_recipients",
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("frequency", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _organization("notification_recipients"),
        _form("notification_recipients"),
        _user("notification_recipients"),
        sa.PrimaryKeyConstraint("form_id", "user_id", name=op.f("pk_notification_recipients")),
    )
    op.create_index("ix_notification_recipients_user_id", "notification_recipients", ["user_id"])
    op.create_table(
        "respondent_copies",
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("question_key", sa.String(length=140), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _organization("respondent_copies"),
        _form("respondent_copies"),
        sa.PrimaryKeyConstraint("form_id", name=op.f("pk_respondent_copies")),
    )
    op.create_table(
        "mail_outbox",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("form_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("submission_id", sa.String(length=40), nullable=True),
        sa.Column("user_id", sa.String(length=40), nullable=True),
        sa.Column("day", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        _organization("mail_outbox"),
        _form("mail_outbox"),
        _user("mail_outbox"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mail_outbox")),
    )
    op.create_index(
        "ix_mail_outbox_next_attempt_at",
        "mail_outbox",
        ["next_attempt_at"],
        postgresql_where=sa.text("status = 'pending'"),
        sqlite_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "uq_mail_outbox_digest",
        "mail_outbox",
        ["form_id", "user_id", "day"],
        unique=True,
        postgresql_where=sa.text("kind = 'digest'"),
        sqlite_where=sa.text("kind = 'digest'"),
    )
    op.create_index("ix_mail_outbox_created_at", "mail_outbox", ["created_at"])


def downgrade() -> None:
    op.drop_table("mail_outbox")
    op.drop_table("respondent_copies")
    op.drop_table("notification_recipients")
