"""The history database's tables at the newest schema revision, as SQLAlchemy Core objects (what the store writes
and the queries read). The migrations in ``migrations/versions/`` build the same tables step by step; a test
checks that upgrading an empty database to the head gives exactly these.

* ``runs``: one results file (its sidecar's fields as columns, the whole sidecar as JSON), keyed by the SHA-256
  of the CSV's bytes, so adding the same file twice stores it once;
* ``results``: every row of a run, with its reps and per-dispatch times (JSON text, as in the CSV);
* ``comparisons``: one compare CSV (the rule, both stacks, the verdict counts), linked to the two runs it
  compared when they are stored; ``verdicts``: its rows;
* ``annotations``: known steps a user marks ("config retune", "driver update"), and retune / bisect outcomes;
* ``calibrations``: one ``harness calibrate`` file (the stack, the GPU, the slowdowns tried, its SHA-256);
  ``calibration_cases``: per case what it resolves and how often its A/A flagged. A run (``runs.calibration_id``)
  and a comparison (``comparisons.calibration_id``) name the calibration kept with them.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

#: the newest migration; ``migrations/versions/`` holds every step to it
HEAD = "0005"

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("path", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("added_at", DateTime, nullable=False),
    Column("added_by", Text, nullable=False),
    Column("run_at", DateTime),
    Column("run_at_source", String(16), nullable=False),
    Column("env_name", Text, nullable=False),
    Column("suite", Text),
    Column("schema_version", Integer, nullable=False),
    Column("rows", Integer, nullable=False),
    Column("timing", Text),
    Column("host", Text),
    Column("gpu_name", Text),
    Column("gpu_uuid", Text),
    Column("gpu_arch", Text),
    Column("driver", Text),
    Column("triton_version", Text),
    Column("triton_commit", Text),
    Column("triton_path", Text),
    Column("torch_version", Text),
    Column("gpu_runtime", Text),
    Column("python_version", Text),
    Column("sm_clock_mhz", Float),
    Column("mem_clock_mhz", Float),
    Column("launch_gap", Text),
    Column("placement", Text),
    Column("move_inputs", Boolean),
    Column("launches_per_rep", Integer),
    Column("reps", Integer),
    Column("knobs", Text),
    Column("git_commit", Text),
    Column("sidecar", Text, nullable=False),
    Column("label", Text, nullable=False, server_default=""),
    Column("tags", Text, nullable=False, server_default=""),
    #: the calibration its sidecar records (harness run --calibration), stored with it; NULL: none
    Column("calibration_id", Integer, ForeignKey("calibrations.id")),
)
Index("ix_runs_run_at", runs.c.run_at)

#: results columns, in the CSV's order (harness.results.schema.COLUMNS), and their types
RESULT_TEXT = (
    "params",
    "dtype",
    "status",
    "config",
    "config_source",
    "rep_times_us",
    "dispatch_us",
    "peak",
    "timing",
    "rep_clocks_mhz",
    "throttle",
    "error",
    "artifacts",
)
RESULT_FLOAT = (
    "time_us",
    "spread_pct",
    "flops",
    "bytes",
    "tflops",
    "gbps",
    "compile_s",
    "rel_err",
    "sm_clock_mhz",
    "gpu_temp_c",
)
RESULT_INT = ("world_size", "reps")

results = Table(
    "results",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kernel", Text, nullable=False),
    Column("case_id", Text, nullable=False),
    Column("params", Text),
    Column("dtype", Text),
    Column("world_size", Integer),
    Column("status", String(16), nullable=False),
    Column("time_us", Float),
    Column("config", Text),
    Column("config_source", Text),
    Column("reps", Integer),
    Column("rep_times_us", Text),
    Column("spread_pct", Float),
    Column("dispatch_us", Text),
    Column("flops", Float),
    Column("bytes", Float),
    Column("peak", Text),
    Column("tflops", Float),
    Column("gbps", Float),
    Column("compile_s", Float),
    Column("rel_err", Float),
    Column("timing", Text),
    Column("sm_clock_mhz", Float),
    Column("rep_clocks_mhz", Text),
    Column("throttle", Text),
    Column("gpu_temp_c", Float),
    Column("error", Text),
    Column("artifacts", Text),
    Column("extra", Text),
    UniqueConstraint("run_id", "kernel", "case_id", name="uq_results_run_case"),
)
Index("ix_results_case", results.c.kernel, results.c.case_id)

comparisons = Table(
    "comparisons",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("path", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("added_at", DateTime, nullable=False),
    Column("added_by", Text, nullable=False),
    Column("compared_at", DateTime),
    Column("rule_rel", Float, nullable=False),
    Column("rule_abs_us", Float, nullable=False),
    Column("rule_min_golden_us", Float, nullable=False),
    Column("golden_run_id", Integer, ForeignKey("runs.id", ondelete="SET NULL")),
    Column("tot_run_id", Integer, ForeignKey("runs.id", ondelete="SET NULL")),
    Column("golden_path", Text),
    Column("tot_path", Text),
    Column("golden_env_name", Text),
    Column("tot_env_name", Text),
    Column("golden_triton", Text),
    Column("tot_triton", Text),
    Column("gpu_name", Text),
    Column("gpu_uuid", Text),
    Column("host", Text),
    Column("same_triton", Boolean, nullable=False),
    Column("cases", Integer, nullable=False),
    Column("regressions", Integer, nullable=False),
    Column("failed_in_tot", Integer, nullable=False),
    Column("improvements", Integer, nullable=False),
    #: regressions whose 95 % interval straddles the limit (NULL: stored before confidence was recorded)
    Column("ambiguous", Integer),
    Column("counts", Text, nullable=False),
    Column("meta", Text, nullable=False),
    Column("label", Text, nullable=False, server_default=""),
    Column("tags", Text, nullable=False, server_default=""),
    #: the calibration it was judged with (--calibration or a sidecar's), stored with it; NULL: none
    Column("calibration_id", Integer, ForeignKey("calibrations.id")),
)
Index("ix_comparisons_compared_at", comparisons.c.compared_at)

VERDICT_TEXT = (
    "params",
    "dtype",
    "verdict",
    "golden_status",
    "tot_status",
    "golden_config",
    "tot_config",
    "peak",
    "note",
    "confidence",
)
VERDICT_FLOAT = (
    "golden_us",
    "tot_us",
    "delta_us",
    "delta_pct",
    "limit_us",
    "flops",
    "bytes",
    "noise_pct",
    "delta_lo_pct",
    "delta_hi_pct",
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("comparison_id", Integer, ForeignKey("comparisons.id", ondelete="CASCADE"), nullable=False),
    Column("kernel", Text, nullable=False),
    Column("case_id", Text, nullable=False),
    Column("params", Text),
    Column("dtype", Text),
    Column("golden_us", Float),
    Column("tot_us", Float),
    Column("delta_us", Float),
    Column("delta_pct", Float),
    Column("limit_us", Float),
    Column("verdict", String(24), nullable=False),
    Column("golden_status", String(16)),
    Column("tot_status", String(16)),
    Column("golden_config", Text),
    Column("tot_config", Text),
    Column("flops", Float),
    Column("bytes", Float),
    Column("peak", Text),
    Column("note", Text),
    Column("confidence", String(16)),
    Column("noise_pct", Float),
    Column("delta_lo_pct", Float),
    Column("delta_hi_pct", Float),
    UniqueConstraint("comparison_id", "kernel", "case_id", name="uq_verdicts_comparison_case"),
)
Index("ix_verdicts_case", verdicts.c.kernel, verdicts.c.case_id)

annotations = Table(
    "annotations",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("created_at", DateTime, nullable=False),
    Column("author", Text, nullable=False),
    Column("at", DateTime, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("text", Text, nullable=False),
    Column("kernel", Text),
    Column("case_id", Text),
    Column("gpu", Text),
    Column("stack", Text),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="SET NULL")),
    Column("details", Text),
)
Index("ix_annotations_at", annotations.c.at)

calibrations = Table(
    "calibrations",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("path", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("added_at", DateTime, nullable=False),
    Column("added_by", Text, nullable=False),
    Column("calibrated_at", DateTime),
    Column("env_name", Text),
    Column("triton_version", Text),
    Column("gpu_name", Text),
    Column("gpu_uuid", Text),
    Column("host", Text),
    Column("slowdowns", Text, nullable=False),
    Column("repeats", Integer),
    Column("cases", Integer, nullable=False),
    Column("unresolved", Integer, nullable=False),
    Column("meta", Text, nullable=False),
    Column("label", Text, nullable=False, server_default=""),
    Column("tags", Text, nullable=False, server_default=""),
    #: SHA-256 of calibration.csv's bytes, what a sidecar's record names (NULL: stored before it was kept)
    Column("sha256", String(64)),
)
Index("ix_calibrations_calibrated_at", calibrations.c.calibrated_at)
Index("ix_calibrations_sha256", calibrations.c.sha256)

CALIBRATION_FLOAT = ("golden_us", "aa_fp_rate", "noise_pct", "resolution_pct", "resolution_us", "limit_pct")
CALIBRATION_INT = ("repeats", "aa_flags", "aa_confident_flags")

calibration_cases = Table(
    "calibration_cases",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("calibration_id", Integer, ForeignKey("calibrations.id", ondelete="CASCADE"), nullable=False),
    Column("kernel", Text, nullable=False),
    Column("case_id", Text, nullable=False),
    Column("golden_us", Float),
    Column("repeats", Integer),
    Column("aa_flags", Integer),
    Column("aa_confident_flags", Integer),
    Column("aa_fp_rate", Float),
    Column("noise_pct", Float),
    Column("resolution_pct", Float),
    Column("resolution_us", Float),
    Column("limit_pct", Float),
    Column("resolves", Boolean),
    Column("caught", Text),
    UniqueConstraint("calibration_id", "kernel", "case_id", name="uq_calibration_cases_case"),
)
Index("ix_calibration_cases_case", calibration_cases.c.kernel, calibration_cases.c.case_id)
