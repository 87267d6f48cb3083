"""On SQLite, a trigger writes each event's outbox row: one statement a
change instead of two (each statement is a round trip to aiosqlite's thread,
which posting felt). PostgreSQL writes both rows in one statement already.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 12:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER events_to_outbox AFTER INSERT ON events "
            "BEGIN INSERT INTO event_outbox (seq) VALUES (NEW.seq); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER events_to_outbox")
