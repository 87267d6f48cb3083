"""Keys of people no longer members of the key's organization are revoked for
good: before this, such a key only stopped working, and came back to life if
its creator rejoined.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 03:10:00
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.get_bind().execute(
        sa.text(
            "UPDATE api_keys SET revoked_at = :now WHERE revoked_at IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM memberships m WHERE m.organization_id = api_keys.organization_id "
            "AND m.user_id = api_keys.user_id)"
        ).bindparams(sa.bindparam("now", datetime.now(UTC), type_=sa.DateTime(timezone=True))),
    )


def downgrade() -> None:
    pass  # a revocation is not undone
