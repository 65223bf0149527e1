"""Calibrations (``harness calibrate``'s calibration.csv): one row per file, and per case the smallest slowdown it
caught, its A/A false-positive rate and whether it resolves the rule's slack.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "calibrations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("file_name", sa.Text, nullable=False),
        sa.Column("added_at", sa.DateTime, nullable=False),
        sa.Column("added_by", sa.Text, nullable=False),
        sa.Column("calibrated_at", sa.DateTime),
        sa.Column("env_name", sa.Text),
        sa.Column("triton_version", sa.Text),
        sa.Column("gpu_name", sa.Text),
        sa.Column("gpu_uuid", sa.Text),
        sa.Column("host", sa.Text),
        sa.Column("slowdowns", sa.Text, nullable=False),
        sa.Column("repeats", sa.Integer),
        sa.Column("cases", sa.Integer, nullable=False),
        sa.Column("unresolved", sa.Integer, nullable=False),
        sa.Column("meta", sa.Text, nullable=False),
        sa.Column("label", sa.Text, nullable=False, server_default=""),
        sa.Column("tags", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("ix_calibrations_calibrated_at", "calibrations", ["calibrated_at"])
    op.create_table(
        "calibration_cases",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("calibration_id", sa.Integer, sa.ForeignKey("calibrations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kernel", sa.Text, nullable=False),
        sa.Column("case_id", sa.Text, nullable=False),
        sa.Column("golden_us", sa.Float),
        sa.Column("repeats", sa.Integer),
        sa.Column("aa_flags", sa.Integer),
        sa.Column("aa_confident_flags", sa.Integer),
        sa.Column("aa_fp_rate", sa.Float),
        sa.Column("noise_pct", sa.Float),
        sa.Column("resolution_pct", sa.Float),
        sa.Column("resolution_us", sa.Float),
        sa.Column("limit_pct", sa.Float),
        sa.Column("resolves", sa.Boolean),
        sa.Column("caught", sa.Text),
        sa.UniqueConstraint("calibration_id", "kernel", "case_id", name="uq_calibration_cases_case"),
    )
    op.create_index("ix_calibration_cases_case", "calibration_cases", ["kernel", "case_id"])


def downgrade() -> None:
    op.drop_index("ix_calibration_cases_case", "calibration_cases")
    op.drop_table("calibration_cases")
    op.drop_index("ix_calibrations_calibrated_at", "calibrations")
    op.drop_table("calibrations")
