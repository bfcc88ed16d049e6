"""The SQLite journal (`journal.db`): server state changes, config errors, calls, tasks.

- `tables`: every table (SQLModel models);
- `migrations`: every migration, in order;
- `db`: `Journal`, which opens the file, migrates it once and writes the `events` rows;
- `tools`: queries over tool calls, "always" approvals and seen tool sets.
"""
