"""datasets and audits

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, index=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("domain", sa.String(64), nullable=True),
        sa.Column("n_rows", sa.Integer, nullable=False),
        sa.Column("n_columns", sa.Integer, nullable=False),
        sa.Column("columns", sa.JSON, nullable=False),
        sa.Column("validation", sa.JSON, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, index=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "audits",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("benchmark_id", sa.String(32), sa.ForeignKey("datasets.id", ondelete="RESTRICT"),
                  nullable=False),
        sa.Column("production_id", sa.String(32), sa.ForeignKey("datasets.id", ondelete="RESTRICT"),
                  nullable=False),
        sa.Column("domain", sa.String(64), nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("progress", sa.Float, nullable=False),
        sa.Column("stage", sa.String(64), nullable=True),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("error", sa.JSON, nullable=True),
        sa.Column("report_path", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("audits")
    op.drop_table("datasets")
