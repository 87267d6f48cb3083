"""Events name the resource they carry (subject_id), so a deleted
submission's answers can be erased from them; webhook endpoints keep what
they were subscribed to and when (webhook_subscriptions), so recovering sends
only what they wanted at the time. Existing endpoints get one period, from
their creation, of what they want now.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")


def _references(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete="CASCADE"
    )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    # Not a batch: on SQLite that would rebuild the table without the
    # trigger that fills the outbox (migration 0012). A plain ALTER keeps it.
    op.execute("ALTER TABLE events ADD COLUMN subject_id VARCHAR(40)")
    op.execute(
        "UPDATE events SET subject_id = (data::jsonb) ->> 'id'"
        if postgres
        else "UPDATE events SET subject_id = json_extract(data, '$.id')"
    )
    op.create_index(
        "ix_events_organization_id_form_id_subject_id",
        "events",
        ["organization_id", "form_id", "subject_id"],
    )
    op.create_table(
        "webhook_subscriptions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("endpoint_id", sa.String(40), nullable=False),
        sa.Column("event_types", JSON, nullable=False),
        sa.Column("form_ids", JSON, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        _references("webhook_subscriptions", "organization_id", "organizations"),
        _references("webhook_subscriptions", "endpoint_id", "webhook_endpoints"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_subscriptions"),
    )
    op.create_index(
        "ix_webhook_subscriptions_organization_id_endpoint_id_started_at",
        "webhook_subscriptions",
        ["organization_id", "endpoint_id", "started_at"],
    )
    # The endpoint's id stands for the period's: unique, and no id function in SQL.
    op.execute(
        "INSERT INTO webhook_subscriptions "
        "(id, organization_id, endpoint_id, event_types, form_ids, started_at) "
        "SELECT 'whs_' || substr(id, 5), organization_id, id, event_types, form_ids, created_at "
        "FROM webhook_endpoints"
    )


def downgrade() -> None:
    op.drop_index(
        "ix_webhook_subscriptions_organization_id_endpoint_id_started_at",
        table_name="webhook_subscriptions",
    )
    op.drop_table("webhook_subscriptions")
    op.drop_index("ix_events_organization_id_form_id_subject_id", table_name="events")
    op.execute("ALTER TABLE events DROP COLUMN subject_id")  # SQLite 3.35+, trigger kept
