"""monitor_heartbeat_outbox: run heartbeats, compacted no-data runs, the webhook outbox

* ``monitor_runs.heartbeat_at``: refreshed by the executing process; a run whose heartbeat is
  older than the run lease is failed as interrupted by any live instance.
* ``monitor_runs.no_data_count`` / ``no_data_since``: consecutive no-data runs kept as one row.
* ``alert_outbox``: each webhook message with its delivery state, retried until delivered.

Additive only: existing rows keep their values (their heartbeat is empty, so their start time
stands in for it).

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("monitor_runs") as batch:
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("no_data_count", sa.Integer, nullable=True))
        batch.add_column(sa.Column("no_data_since", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "alert_outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("monitor_id", sa.String(32), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("alert_ids", sa.JSON, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_alert_outbox_monitor_id", "alert_outbox", ["monitor_id"])
    op.create_index("ix_alert_outbox_state", "alert_outbox", ["state"])
    op.create_index("ix_alert_outbox_next_attempt_at", "alert_outbox", ["next_attempt_at"])


def downgrade() -> None:
    op.drop_table("alert_outbox")
    with op.batch_alter_table("monitor_runs") as batch:
        batch.drop_column("no_data_since")
        batch.drop_column("no_data_count")
        batch.drop_column("heartbeat_at")
