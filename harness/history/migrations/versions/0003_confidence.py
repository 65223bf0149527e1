"""How sure each stored verdict is (compare.csv's ``confidence``, ``noise_pct`` and the 95 % interval of Δ%), and
per comparison the regressions that were ambiguous. Verdicts stored before have NULL there: they were not
judged, which is not the same as confident.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.add_column(sa.Column("confidence", sa.String(16)))
        batch.add_column(sa.Column("noise_pct", sa.Float))
        batch.add_column(sa.Column("delta_lo_pct", sa.Float))
        batch.add_column(sa.Column("delta_hi_pct", sa.Float))
    with op.batch_alter_table("comparisons") as batch:
        batch.add_column(sa.Column("ambiguous", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("comparisons") as batch:
        batch.drop_column("ambiguous")
    with op.batch_alter_table("verdicts") as batch:
        for name in ("delta_hi_pct", "delta_lo_pct", "noise_pct", "confidence"):
            batch.drop_column(name)
