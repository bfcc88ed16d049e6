"""One server's session: its actor, transports (stdio, streamable HTTP, legacy SSE),
framing, restart policy and what it needs while it lasts."""
