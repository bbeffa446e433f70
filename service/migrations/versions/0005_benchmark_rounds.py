"""benchmark_rounds: named benchmark series and their rounds

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "benchmark_series",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("domain", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "benchmark_rounds",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("series", sa.String(128), sa.ForeignKey("benchmark_series.name", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("dataset_id", sa.String(32), sa.ForeignKey("datasets.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("plan_audit_id", sa.String(32), nullable=True),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("series", "number", name="uq_benchmark_rounds_series_number"),
    )
    op.create_index("ix_benchmark_rounds_series", "benchmark_rounds", ["series"])


def downgrade() -> None:
    op.drop_index("ix_benchmark_rounds_series", table_name="benchmark_rounds")
    op.drop_table("benchmark_rounds")
    op.drop_table("benchmark_series")
