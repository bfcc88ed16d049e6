"""Long-running tool calls: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

- `protocol`: the wire shapes and the SDK client extension (supervisor side only).
- `store`: the journal tables and their queries (supervisor side only).
- `manager`: the per-supervisor task manager (bounds, listening, polling, resume).
- (the control API routes under `/v1/tasks` live in `control/tasks_api.py`)
- `forms`: input_required form checks (stdlib only; the CLI uses them too).
- `follow`: the CLI side of following a task (stdlib only).

See docs/tasks.md.
"""
