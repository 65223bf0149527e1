"""Alembic migrations of the history database (env.py, versions/): run by harness.history.store, not by hand."""
