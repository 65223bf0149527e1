"""Core tables: runs (one results file and its sidecar), their results rows, comparisons and their verdicts.

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _results_columns() -> list[sa.Column]:
    text = sa.Text
    return [
        sa.Column("params", text),
        sa.Column("dtype", text),
        sa.Column("world_size", sa.Integer),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("time_us", sa.Float),
        sa.Column("config", text),
        sa.Column("config_source", text),
        sa.Column("reps", sa.Integer),
        sa.Column("rep_times_us", text),
        sa.Column("spread_pct", sa.Float),
        sa.Column("dispatch_us", text),
        sa.Column("flops", sa.Float),
        sa.Column("bytes", sa.Float),
        sa.Column("peak", text),
        sa.Column("tflops", sa.Float),
        sa.Column("gbps", sa.Float),
        sa.Column("compile_s", sa.Float),
        sa.Column("rel_err", sa.Float),
        sa.Column("timing", text),
        sa.Column("sm_clock_mhz", sa.Float),
        sa.Column("rep_clocks_mhz", text),
        sa.Column("throttle", text),
        sa.Column("gpu_temp_c", sa.Float),
        sa.Column("error", text),
        sa.Column("artifacts", text),
        sa.Column("extra", text),
    ]


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("file_name", sa.Text, nullable=False),
        sa.Column("added_at", sa.DateTime, nullable=False),
        sa.Column("added_by", sa.Text, nullable=False),
        sa.Column("run_at", sa.DateTime),
        sa.Column("run_at_source", sa.String(16), nullable=False),
        sa.Column("env_name", sa.Text, nullable=False),
        sa.Column("suite", sa.Text),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("timing", sa.Text),
        sa.Column("host", sa.Text),
        sa.Column("gpu_name", sa.Text),
        sa.Column("gpu_uuid", sa.Text),
        sa.Column("gpu_arch", sa.Text),
        sa.Column("driver", sa.Text),
        sa.Column("triton_version", sa.Text),
        sa.Column("triton_commit", sa.Text),
        sa.Column("triton_path", sa.Text),
        sa.Column("torch_version", sa.Text),
        sa.Column("gpu_runtime", sa.Text),
        sa.Column("python_version", sa.Text),
        sa.Column("sm_clock_mhz", sa.Float),
        sa.Column("mem_clock_mhz", sa.Float),
        sa.Column("launch_gap", sa.Text),
        sa.Column("placement", sa.Text),
        sa.Column("move_inputs", sa.Boolean),
        sa.Column("launches_per_rep", sa.Integer),
        sa.Column("reps", sa.Integer),
        sa.Column("knobs", sa.Text),
        sa.Column("git_commit", sa.Text),
        sa.Column("sidecar", sa.Text, nullable=False),
    )
    op.create_index("ix_runs_run_at", "runs", ["run_at"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kernel", sa.Text, nullable=False),
        sa.Column("case_id", sa.Text, nullable=False),
        *_results_columns(),
        sa.UniqueConstraint("run_id", "kernel", "case_id", name="uq_results_run_case"),
    )
    op.create_index("ix_results_case", "results", ["kernel", "case_id"])
    op.create_table(
        "comparisons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("file_name", sa.Text, nullable=False),
        sa.Column("added_at", sa.DateTime, nullable=False),
        sa.Column("added_by", sa.Text, nullable=False),
        sa.Column("compared_at", sa.DateTime),
        sa.Column("rule_rel", sa.Float, nullable=False),
        sa.Column("rule_abs_us", sa.Float, nullable=False),
        sa.Column("rule_min_golden_us", sa.Float, nullable=False),
        sa.Column("golden_run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL")),
        sa.Column("tot_run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL")),
        sa.Column("golden_path", sa.Text),
        sa.Column("tot_path", sa.Text),
        sa.Column("golden_env_name", sa.Text),
        sa.Column("tot_env_name", sa.Text),
        sa.Column("golden_triton", sa.Text),
        sa.Column("tot_triton", sa.Text),
        sa.Column("gpu_name", sa.Text),
        sa.Column("gpu_uuid", sa.Text),
        sa.Column("host", sa.Text),
        sa.Column("same_triton", sa.Boolean, nullable=False),
        sa.Column("cases", sa.Integer, nullable=False),
        sa.Column("regressions", sa.Integer, nullable=False),
        sa.Column("failed_in_tot", sa.Integer, nullable=False),
        sa.Column("improvements", sa.Integer, nullable=False),
        sa.Column("counts", sa.Text, nullable=False),
        sa.Column("meta", sa.Text, nullable=False),
    )
    op.create_index("ix_comparisons_compared_at", "comparisons", ["compared_at"])
    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("comparison_id", sa.Integer, sa.ForeignKey("comparisons.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kernel", sa.Text, nullable=False),
        sa.Column("case_id", sa.Text, nullable=False),
        sa.Column("params", sa.Text),
        sa.Column("dtype", sa.Text),
        sa.Column("golden_us", sa.Float),
        sa.Column("tot_us", sa.Float),
        sa.Column("delta_us", sa.Float),
        sa.Column("delta_pct", sa.Float),
        sa.Column("limit_us", sa.Float),
        sa.Column("verdict", sa.String(24), nullable=False),
        sa.Column("golden_status", sa.String(16)),
        sa.Column("tot_status", sa.String(16)),
        sa.Column("golden_config", sa.Text),
        sa.Column("tot_config", sa.Text),
        sa.Column("flops", sa.Float),
        sa.Column("bytes", sa.Float),
        sa.Column("peak", sa.Text),
        sa.Column("note", sa.Text),
        sa.UniqueConstraint("comparison_id", "kernel", "case_id", name="uq_verdicts_comparison_case"),
    )
    op.create_index("ix_verdicts_case", "verdicts", ["kernel", "case_id"])


def downgrade() -> None:
    for table in ("verdicts", "comparisons", "results", "runs"):
        op.drop_table(table)
