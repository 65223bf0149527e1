"""A calibration kept with the results (``harness run --calibration``: the sidecar's ``calibration``) and the one a
comparison was judged with: ``runs.calibration_id`` and ``comparisons.calibration_id`` name the stored calibration
(NULL: none, or stored before; a calibration one refers to is not removed), and ``calibrations.sha256``, the SHA-256 of calibration.csv's bytes (what a
sidecar's record names), finds it whichever way it came in: its file, a run's sidecar or a comparison's metadata.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch:
        batch.add_column(sa.Column("sha256", sa.String(64)))
    op.create_index("ix_calibrations_sha256", "calibrations", ["sha256"])
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in ("runs", "comparisons"):
        if sqlite:
            # SQLite adds a column with its REFERENCES in place. Batch mode would copy the table and drop the old
            # one, and with foreign keys on that drop deletes every row that refers to it (a run's results). No ON
            # DELETE: a calibration something refers to is not removed (the store says which refer to it)
            op.execute(f"ALTER TABLE {table} ADD COLUMN calibration_id INTEGER REFERENCES calibrations (id)")
        else:
            op.add_column(table, sa.Column("calibration_id", sa.Integer))
            op.create_foreign_key(f"fk_{table}_calibration_id", table, "calibrations", ["calibration_id"], ["id"])


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in ("comparisons", "runs"):
        if sqlite:  # SQLite (3.35 and later) drops a column in place; it must not be a batch copy (above)
            op.execute(f"ALTER TABLE {table} DROP COLUMN calibration_id")
        else:
            op.drop_constraint(f"fk_{table}_calibration_id", table, type_="foreignkey")
            op.drop_column(table, "calibration_id")
    op.drop_index("ix_calibrations_sha256", "calibrations")
    with op.batch_alter_table("calibrations") as batch:
        batch.drop_column("sha256")
