"""Annotations (known steps: a config retune, a driver update; retune and bisect outcomes), and a label and tags
on every run and comparison (``experiment``, ``nightly``, ...).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("runs", "comparisons"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("label", sa.Text, nullable=False, server_default=""))
            batch.add_column(sa.Column("tags", sa.Text, nullable=False, server_default=""))
    op.create_table(
        "annotations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("kernel", sa.Text),
        sa.Column("case_id", sa.Text),
        sa.Column("gpu", sa.Text),
        sa.Column("stack", sa.Text),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL")),
        sa.Column("details", sa.Text),
    )
    op.create_index("ix_annotations_at", "annotations", ["at"])


def downgrade() -> None:
    op.drop_index("ix_annotations_at", "annotations")
    op.drop_table("annotations")
    for table in ("runs", "comparisons"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("tags")
            batch.drop_column("label")
