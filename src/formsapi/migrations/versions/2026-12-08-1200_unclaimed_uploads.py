"""Uploads no submission took, found per form: the index on files' form
takes their expiry too, so what a form's unclaimed uploads hold is read
from them alone, not from every file its submissions have.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-08 12:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_files_form_id_expires_at", "files", ["form_id", "expires_at"])
    op.drop_index("ix_files_form_id", table_name="files")


def downgrade() -> None:
    op.create_index("ix_files_form_id", "files", ["form_id"])
    op.drop_index("ix_files_form_id_expires_at", table_name="files")
