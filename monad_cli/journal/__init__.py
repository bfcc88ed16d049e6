"""The journal: server state changes, config errors, calls, approvals, tasks (docs/supervisor.md
"Journal"; a fleet's shared journal: docs/fleet.md).

- `schema`: every table, written once as the migrations that make it, in order;
- `pool` (SQLite, the standard library's `sqlite3`) and `pg` (PostgreSQL, psycopg): the two
  ways in, of one shape, so everything else is written once for both;
- `db`: `Journal`, which opens the local file, migrates it once and writes the `events` rows;
- `reader`: the events and calls every reader gets; `tools`: calls, approvals, tool sets;
- `fleet`: the link that ships rows to the shared journal; `retention`: pruning, both;
- `settings`: where the journal lives.
"""
