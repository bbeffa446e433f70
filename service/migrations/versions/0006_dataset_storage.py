"""dataset_storage: partitioned datasets and datasets registered in place

``storage`` is ``copied`` (Parquet parts under data_dir, or one file for datasets stored
before this revision) or ``registered`` (the user's files under CONTEXTSHIFT_DATA_ROOTS);
``n_partitions`` counts the Parquet files. Existing rows are one copied file each.

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("storage", sa.String(16), nullable=False, server_default="copied"))
        batch.add_column(sa.Column("n_partitions", sa.Integer, nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("n_partitions")
        batch.drop_column("storage")
