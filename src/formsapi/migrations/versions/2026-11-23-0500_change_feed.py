"""The change feed: a per-form number for every change to its submissions, in
commit order, per-submission versions for edits, and tombstones for deletes.

Existing submissions are numbered 1, 2, ... per form in (submitted_at, id)
order, the order they most likely committed in; each form's counter starts
at its count.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for column in ("change_seq", "tombstone_horizon"):
        op.add_column(
            "forms", sa.Column(column, sa.BigInteger(), nullable=False, server_default="0")
        )
    # Plain ADD COLUMNs with constant defaults: no table is rebuilt.
    op.add_column(
        "submissions", sa.Column("change_seq", sa.BigInteger(), nullable=False, server_default="0")
    )
    op.add_column(
        "submissions", sa.Column("version", sa.Integer(), nullable=False, server_default="1")
    )
    op.add_column("submissions", sa.Column("updated_at", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE submissions SET change_seq = numbered.seq FROM ("
        " SELECT id, row_number() OVER ("
        "  PARTITION BY organization_id, form_id ORDER BY submitted_at, id) AS seq"
        " FROM submissions) AS numbered"
        " WHERE submissions.id = numbered.id"
    )
    op.execute(
        "UPDATE forms SET change_seq = (SELECT coalesce(max(s.change_seq), 0) FROM submissions s"
        " WHERE s.organization_id = forms.organization_id AND s.form_id = forms.id)"
    )
    if postgres:
        # Every writer sets it; a forgotten one fails instead of writing 0,
        # which the feed (after=0 means "> 0") would never show. SQLite keeps
        # the default: dropping it would copy the whole table.
        op.alter_column("submissions", "change_seq", server_default=None)
    op.create_index(
        "ix_submissions_organization_id_form_id_change_seq",
        "submissions",
        ["organization_id", "form_id", "change_seq"],
        unique=True,
    )
    op.create_table(
        "submission_tombstones",
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("form_id", sa.String(40), nullable=False),
        sa.Column("change_seq", sa.BigInteger(), nullable=False),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name="fk_submission_tombstones_organization_id_organizations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name="fk_submission_tombstones_form_id_forms",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "form_id", "change_seq", name="pk_submission_tombstones"
        ),
    )
    op.create_index("ix_submission_tombstones_deleted_at", "submission_tombstones", ["deleted_at"])


def downgrade() -> None:
    op.drop_table("submission_tombstones")
    op.drop_index("ix_submissions_organization_id_form_id_change_seq", "submissions")
    with op.batch_alter_table("submissions") as batch:
        for column in ("updated_at", "version", "change_seq"):
            batch.drop_column(column)
    with op.batch_alter_table("forms") as batch:
        for column in ("tombstone_horizon", "change_seq"):
            batch.drop_column(column)
