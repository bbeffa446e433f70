"""unique (name, sha256) datasets, audit owners and leases, versioned domain packs

Revision ID: 0003
Revises: 0002
"""
import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    _rename_duplicate_datasets()
    # a unique index, not a constraint: SQLite would have to rebuild the referenced table
    op.create_index("uq_datasets_name_sha256", "datasets", ["name", "sha256"], unique=True)
    with op.batch_alter_table("audits") as batch:
        batch.add_column(sa.Column("owner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("domain_version", sa.Integer, nullable=True))
    op.create_table(
        "instances",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("domain_packs") as batch:
        batch.add_column(sa.Column("version", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "domain_pack_versions",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("yaml", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    _copy_packs_to_versions()


def _rename_duplicate_datasets() -> None:
    """Earlier races could store one (name, content) twice: keep the oldest name, suffix the rest."""
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, name, sha256 FROM datasets ORDER BY created_at, id")).fetchall()
    seen = set()
    for dataset_id, name, sha256 in rows:
        if (name, sha256) in seen:
            renamed = f"{name[:200]} (duplicate {dataset_id})"
            conn.execute(sa.text("UPDATE datasets SET name = :n WHERE id = :i"), {"n": renamed, "i": dataset_id})
        seen.add((name, sha256))


def _copy_packs_to_versions() -> None:
    conn = op.get_bind()
    for name, text, created in conn.execute(sa.text("SELECT name, yaml, created_at FROM domain_packs")).fetchall():
        conn.execute(sa.text("INSERT INTO domain_pack_versions (name, version, yaml, sha256, created_at) "
                             "VALUES (:n, 1, :y, :s, :c)"),
                     {"n": name, "y": text, "s": hashlib.sha256(text.encode()).hexdigest(), "c": created})


def downgrade() -> None:
    op.drop_table("domain_pack_versions")
    with op.batch_alter_table("domain_packs") as batch:
        batch.drop_column("retired_at")
        batch.drop_column("version")
    op.drop_table("instances")
    with op.batch_alter_table("audits") as batch:
        batch.drop_column("domain_version")
        batch.drop_column("heartbeat_at")
        batch.drop_column("owner")
    op.drop_index("uq_datasets_name_sha256", table_name="datasets")
