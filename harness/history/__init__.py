"""History: every run and every comparison kept in a database (SQLite by default, PostgreSQL for a team), with
trends, verdict changes and change points across Triton versions (docs/history.md)."""
