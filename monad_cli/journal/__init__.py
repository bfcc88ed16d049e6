"""The SQLite journal (`journal.db`): server state changes, config errors, calls, tasks."""
