"""The change feed's index on (form_id, change_seq) instead of
(organization_id, form_id, change_seq): a form id is unique on its own, and
the narrower entry every submission writes under its form's lock kept posting
within its earlier rate (bench/RESULTS.md).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 07:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_submissions_form_id_change_seq", "submissions", ["form_id", "change_seq"], unique=True
    )
    op.drop_index("ix_submissions_organization_id_form_id_change_seq", "submissions")


def downgrade() -> None:
    op.create_index(
        "ix_submissions_organization_id_form_id_change_seq",
        "submissions",
        ["organization_id", "form_id", "change_seq"],
        unique=True,
    )
    op.drop_index("ix_submissions_form_id_change_seq", "submissions")
