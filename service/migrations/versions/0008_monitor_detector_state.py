"""monitor_detector_state: the monitors' e-detector evidence replaces their windows of labelled counts

``monitors.harm_state`` (the last three labelled runs' counts per slice) becomes
``monitors.detector_state``: the drift and harm e-detectors' evidence since the monitor started
(``service.monitors.decide``). Existing values are kept under the new name; the first run after
the upgrade sees a state without e-detectors and restarts them from the benchmark (its statement
says so), since old windows cannot be turned into evidence since a change.

Revision ID: 0008
Revises: 0007
"""
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.alter_column("harm_state", new_column_name="detector_state")


def downgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.alter_column("detector_state", new_column_name="harm_state")
