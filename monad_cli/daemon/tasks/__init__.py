"""Long-running tool calls: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

- `snapshot`: folding a task snapshot into its row, a pure function (stdlib only).
- `protocol`: the wire shapes and the SDK client extension (supervisor side only).
- `store`: queries over the journal's `tasks` table (supervisor side only).
- `ledger`: the rows and every change to them, journaled (supervisor side only).
- `connection`: one server's submit, poll and listen loops over its live connection.
- `manager`: the per-supervisor task manager's API (start, show, list, answer, cancel);
  `views`: its reading side; `legacy`: 2025-11-25 servers' tasks.

Task states and their transitions (`core/task_states.py`) and input_required forms
(`core/task_forms.py`) are stdlib only, shared with the CLI.

Nothing here imports the supervisor: the `TaskManager` gets the journal, a lookup of the
servers' live links, the redaction function, a clock and a timeout lookup. The control API's
`/v1/tasks` routes are `daemon/api/tasks.py`; the CLI side of following a task is
`cli/commands/_follow.py`. See docs/tasks.md.
"""
