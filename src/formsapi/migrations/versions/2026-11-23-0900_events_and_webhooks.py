"""Events and webhooks: the events log (written with each change) and its
outbox for fan-out, webhook endpoints, their deliveries and each delivery's
attempts.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql")


def _references(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete="CASCADE"
    )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    # The writing transaction's id, on PostgreSQL: see models/event.py.
    xid_default = sa.text("pg_current_xact_id()::text::bigint" if postgres else "0")
    op.create_table(
        "events",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("xid", sa.BigInteger(), nullable=False, server_default=xid_default),
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("form_id", sa.String(40)),
        sa.Column("data", sa.Text(), nullable=False),
        _references("events", "organization_id", "organizations"),
        sa.PrimaryKeyConstraint("seq", name="pk_events"),
        sa.UniqueConstraint("id", name="uq_events_id"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_events_organization_id_xid_seq", "events", ["organization_id", "xid", "seq"]
    )
    op.create_index("ix_events_occurred_at", "events", ["occurred_at"])
    op.create_table(
        "event_positions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("purged_xid", sa.BigInteger(), nullable=False),
        sa.Column("purged_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_event_positions"),
    )
    op.execute("INSERT INTO event_positions (id, purged_xid, purged_seq) VALUES (1, 0, 0)")
    op.create_table(
        "event_outbox",
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_event_outbox"),
    )
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("event_types", JSON, nullable=False),
        sa.Column("form_ids", JSON, nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(500)),
        sa.Column("disabled_at", sa.DateTime(timezone=True)),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("previous_secret", sa.Text()),
        sa.Column("previous_secret_until", sa.DateTime(timezone=True)),
        sa.Column("failing_since", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _references("webhook_endpoints", "organization_id", "organizations"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_endpoints"),
    )
    op.create_index(
        "ix_webhook_endpoints_organization_id_created_at",
        "webhook_endpoints",
        ["organization_id", "created_at"],
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("endpoint_id", sa.String(40), nullable=False),
        sa.Column("event_seq", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True)),
        sa.Column("last_status_code", sa.Integer()),
        sa.Column("last_error", sa.String(500)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _references("webhook_deliveries", "organization_id", "organizations"),
        _references("webhook_deliveries", "endpoint_id", "webhook_endpoints"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
    )
    pending = sa.text("status = 'pending'")
    op.create_index(
        "ix_webhook_deliveries_next_attempt_at",
        "webhook_deliveries",
        ["next_attempt_at"],
        postgresql_where=pending,
        sqlite_where=pending,
    )
    op.create_index(
        "ix_webhook_deliveries_endpoint_id_next_attempt_at",
        "webhook_deliveries",
        ["endpoint_id", "next_attempt_at"],
        postgresql_where=pending,
        sqlite_where=pending,
    )
    op.create_index(
        "ix_webhook_deliveries_organization_id_endpoint_id_created_at",
        "webhook_deliveries",
        ["organization_id", "endpoint_id", "created_at"],
    )
    op.create_index("ix_webhook_deliveries_created_at", "webhook_deliveries", ["created_at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("organization_id", sa.String(40), nullable=False),
        sa.Column("delivery_id", sa.String(40), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer()),
        sa.Column("response_body", sa.Text(), nullable=False),
        sa.Column("error", sa.String(500)),
        _references("webhook_attempts", "organization_id", "organizations"),
        _references("webhook_attempts", "delivery_id", "webhook_deliveries"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_attempts"),
    )
    op.create_index(
        "ix_webhook_attempts_organization_id_delivery_id",
        "webhook_attempts",
        ["organization_id", "delivery_id"],
    )
    op.create_index("ix_webhook_attempts_attempted_at", "webhook_attempts", ["attempted_at"])


def downgrade() -> None:
    for table in (
        "webhook_attempts",
        "webhook_deliveries",
        "webhook_endpoints",
        "event_positions",
        "event_outbox",
        "events",
    ):
        op.drop_table(table)
