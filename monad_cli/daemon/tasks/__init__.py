"""Long-running tool calls: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

`snapshot` folds a task snapshot into its row (stdlib only); `protocol` has the wire shapes
and the SDK client extension, `legacy` 2025-11-25 servers' tasks; `store` queries the
journal's `tasks` table, `ledger` journals every change; `connection` runs one server's
loops; `manager` is the task manager's API, `views` its reading side. States
(`core/task_states.py`) and input forms (`core/task_forms.py`) are shared with the CLI.
Nothing here imports the supervisor. See docs/tasks.md.
"""
