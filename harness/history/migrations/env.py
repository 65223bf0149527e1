"""Alembic's entry point: migrates on the connection harness.history.store opened (inside its transaction, which
holds the database's write lock), never on one of its own."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
