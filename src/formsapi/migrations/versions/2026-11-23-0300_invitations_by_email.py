"""Invitations name an email address and a role, and membership begins only
when they are accepted; password resets.

Members who had been added without a password (their membership active
before they ever signed in) become pending invitations of the same role: an
unexpired link keeps working, an expired one shows as expired on the members
page for an admin to renew.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 03:00:00
"""

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from ulid import ULID

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _new_id() -> str:
    return f"inv_{str(ULID()).lower()}"


def upgrade() -> None:
    with op.batch_alter_table("invitations") as batch:
        batch.add_column(sa.Column("email", sa.String(length=320), nullable=True))
        batch.add_column(sa.Column("role", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("token_hash", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("invited_by", sa.String(length=40), nullable=True))

    connection = op.get_bind()
    now = datetime.now(UTC)
    # The pending members: a membership, no password yet.
    pending = connection.execute(
        sa.text(
            "SELECT m.organization_id, m.user_id, m.role, u.email FROM memberships m "
            "JOIN users u ON u.id = m.user_id WHERE u.password_hash IS NULL"
        )
    ).all()
    for organization_id, user_id, role, email in pending:
        links = connection.execute(
            sa.text(
                "SELECT id FROM invitations WHERE organization_id = :o AND user_id = :u "
                "ORDER BY created_at DESC"
            ),
            {"o": organization_id, "u": user_id},
        ).all()
        if links:
            newest, *older = (row[0] for row in links)
            # The old id was the token's hash: the link already sent keeps working.
            connection.execute(
                sa.text(
                    "UPDATE invitations SET id = :id, token_hash = :hash, email = :email, "
                    "role = :role WHERE id = :hash"
                ),
                {"id": _new_id(), "hash": newest, "email": email, "role": role},
            )
            for stale in older:
                connection.execute(sa.text("DELETE FROM invitations WHERE id = :id"), {"id": stale})
        else:
            # Expired, and with a token nobody holds: an admin sends a new link.
            connection.execute(
                sa.text(
                    "INSERT INTO invitations (id, organization_id, user_id, email, role, "
                    "token_hash, created_at, expires_at) "
                    "VALUES (:id, :o, :u, :email, :role, :hash, :now, :now)"
                ).bindparams(sa.bindparam("now", type_=sa.DateTime(timezone=True))),
                {
                    "id": _new_id(),
                    "o": organization_id,
                    "u": user_id,
                    "email": email,
                    "role": role,
                    "hash": secrets.token_hex(32),
                    "now": now,
                },
            )
        connection.execute(
            sa.text("DELETE FROM memberships WHERE organization_id = :o AND user_id = :u"),
            {"o": organization_id, "u": user_id},
        )
    # Links of people who had since chosen a password, or left: nothing to carry.
    connection.execute(sa.text("DELETE FROM invitations WHERE token_hash IS NULL"))

    with op.batch_alter_table("invitations") as batch:
        batch.drop_index("ix_invitations_user_id")
        batch.drop_index("ix_invitations_organization_id")
        batch.drop_constraint("fk_invitations_user_id_users", type_="foreignkey")
        batch.drop_column("user_id")
        batch.alter_column("id", existing_type=sa.String(length=64), type_=sa.String(length=40))
        for column, length in (("email", 320), ("role", 20), ("token_hash", 64)):
            batch.alter_column(column, existing_type=sa.String(length=length), nullable=False)
        batch.create_unique_constraint(
            "uq_invitations_organization_id_email", ["organization_id", "email"]
        )
        batch.create_unique_constraint("uq_invitations_token_hash", ["token_hash"])
        batch.create_foreign_key(
            "fk_invitations_invited_by_users", "users", ["invited_by"], ["id"], ondelete="SET NULL"
        )

    op.create_table(
        "password_resets",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_password_resets_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_password_resets")),
    )
    with op.batch_alter_table("password_resets") as batch:
        batch.create_index("ix_password_resets_user_id", ["user_id"], unique=False)


def downgrade() -> None:
    raise NotImplementedError("invitations cannot go back to naming users")
