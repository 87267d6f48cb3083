"""Forms hold hidden fields, variables, rules and endings beside their
blocks (`definition`, kept per version like the blocks), and a submission
keeps the ending its respondent reached.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 18:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json = "JSONB" if op.get_bind().dialect.name == "postgresql" else "JSON"
    # Plain ALTERs: a batch would rebuild SQLite's tables without their triggers.
    op.execute(f"ALTER TABLE forms ADD COLUMN definition {json}")
    op.execute(f"ALTER TABLE form_versions ADD COLUMN definition {json}")
    op.execute("ALTER TABLE submissions ADD COLUMN ending VARCHAR(64)")


def downgrade() -> None:
    op.execute("ALTER TABLE submissions DROP COLUMN ending")
    op.execute("ALTER TABLE form_versions DROP COLUMN definition")
    op.execute("ALTER TABLE forms DROP COLUMN definition")
