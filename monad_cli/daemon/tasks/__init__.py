"""Long-running tool calls: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

- `states`: task states and every allowed transition (stdlib only; the CLI uses it too).
- `snapshot`: folding a task snapshot into its row, a pure function (stdlib only).
- `forms`: input_required form checks (stdlib only; the CLI uses them too).
- `protocol`: the wire shapes and the SDK client extension (supervisor side only).
- `store`: queries over the journal's `tasks` table (supervisor side only).
- `ledger`: the rows and every change to them, journaled (supervisor side only).
- `connection`: one server's submit, poll and listen loops over its live connection.
- `manager`: the per-supervisor task manager's API (start, show, list, answer, cancel).

Nothing here imports the supervisor: the `TaskManager` gets the journal, a lookup of the
servers' live links, the redaction function, a clock and a timeout lookup. The control API's
`/v1/tasks` routes are `daemon/api/tasks.py`; the CLI side of following a task is
`cli/commands/_follow.py`. See docs/tasks.md.
"""
