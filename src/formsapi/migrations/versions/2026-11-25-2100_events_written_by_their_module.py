"""On SQLite, an event's outbox row is written by the event module's own
statement, as on PostgreSQL, instead of by a trigger (0012) that only this
migration showed: events have one way to be written (event/repository.py).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 21:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_to_outbox")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER events_to_outbox AFTER INSERT ON events "
            "BEGIN INSERT INTO event_outbox (seq) VALUES (NEW.seq); END"
        )
