"""monitors: scheduled monitors, their runs, taken files, alerts and webhook deliveries

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "monitors",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("benchmark_id", sa.String(32), sa.ForeignKey("datasets.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("domain", sa.String(64), nullable=False),
        sa.Column("source", sa.JSON, nullable=False),
        sa.Column("schedule", sa.JSON, nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("alerts", sa.JSON, nullable=False),
        sa.Column("alpha", sa.Float, nullable=False),
        sa.Column("watermark", sa.Text, nullable=True),
        sa.Column("n_tested", sa.Integer, nullable=False),
        sa.Column("alpha_spent", sa.Float, nullable=False),
        sa.Column("harm_state", sa.JSON, nullable=False),
        sa.Column("last_fired_at", TZ, nullable=True),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", TZ, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "monitor_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("monitor_id", sa.String(32), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("executed_by", sa.String(64), nullable=True),
        sa.Column("n_rows", sa.Integer, nullable=True),
        sa.Column("audit_id", sa.String(32), nullable=True),
        sa.Column("alpha", sa.Float, nullable=True),
        sa.Column("verdict", sa.JSON, nullable=True),
        sa.Column("summary", sa.JSON, nullable=True),
        sa.Column("alert_ids", sa.JSON, nullable=False),
        sa.Column("error", sa.JSON, nullable=True),
        sa.Column("created_at", TZ, nullable=False, index=True),
        sa.Column("started_at", TZ, nullable=True),
        sa.Column("finished_at", TZ, nullable=True),
    )
    op.create_table(
        "monitor_files",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("monitor_id", sa.String(32), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("taken_at", TZ, nullable=False),
        sa.UniqueConstraint("monitor_id", "path", "sha256", name="uq_monitor_file"),
    )
    op.create_table(
        "alerts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("monitor_id", sa.String(32), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("statement", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("opened_run_id", sa.String(32), nullable=False),
        sa.Column("last_seen_run_id", sa.String(32), nullable=False),
        sa.Column("missed_runs", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("last_seen", TZ, nullable=False),
        sa.Column("acknowledged_at", TZ, nullable=True),
        sa.Column("resolved_at", TZ, nullable=True),
    )
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("monitor_id", sa.String(32), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("at", TZ, nullable=False),
    )


def downgrade() -> None:
    for table in ("alert_deliveries", "alerts", "monitor_files", "monitor_runs", "monitors"):
        op.drop_table(table)
